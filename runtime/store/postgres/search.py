"""Full-text search on PostgreSQL with SQLite's segmentation: tsvectors and tsqueries built as literals.

The document side is :func:`runtime.store.text.index_text` (jieba words; one token per CJK character),
the query side :func:`runtime.store.text.parse_query`, exactly as the SQLite backend uses them. Nothing
goes through PostgreSQL's text parser or a dictionary: the store writes the tokens into ``tsvector``
literals itself (lexeme and position, the ``simple`` configuration's view without its parser), so a
token is a lexeme whatever characters it holds. A document matches as on SQLite: every query word
among ``words`` (``w1 & w2``), or every query phrase among ``chars`` in order (``c1 <-> c2``, the
positions are consecutive). Both columns carry a GIN index.

PostgreSQL keeps at most 256 positions per lexeme and none past 16,383: a character repeated more
than 256 times in one long message can miss a phrase that begins after its 256th occurrence (SQLite
would find it). Single words are unaffected.
"""

from __future__ import annotations

from runtime.store.text import IndexedText, TextQuery

__all__ = ["MAX_POSITIONS", "text_match", "tsquery", "tsvector", "vectors"]

#: PostgreSQL's limits: positions per lexeme, the largest position, bytes in one lexeme.
MAX_POSITIONS = 256
_MAX_POSITION = 16_383
_MAX_LEXEME_BYTES = 2_046


def _quote(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def _fits(token: str) -> bool:
    return bool(token) and len(token.encode("utf-8")) <= _MAX_LEXEME_BYTES


def tsvector(tokens: str) -> str:
    """The ``tsvector`` literal of space-separated ``tokens``, each at its 1-based position."""
    positions: dict[str, list[int]] = {}
    for index, token in enumerate(tokens.split(), start=1):
        if not _fits(token):
            continue
        seen = positions.setdefault(token, [])
        if len(seen) < MAX_POSITIONS:
            seen.append(min(index, _MAX_POSITION))
    return " ".join(f"{_quote(token)}:{','.join(map(str, at))}" for token, at in positions.items())


def vectors(indexed: IndexedText) -> tuple[str, str]:
    """The ``words`` and ``chars`` tsvector literals of a document."""
    return tsvector(indexed.words), tsvector(indexed.chars)


def tsquery(query: TextQuery) -> tuple[str | None, str | None]:
    """The tsquery literals for the ``words`` and ``chars`` columns (``None``: that side has no terms)."""
    words = [w for w in query.words if _fits(w)]
    phrases = [[t for t in p if _fits(t)] for p in query.phrases]
    by_words = " & ".join(_quote(w) for w in words) or None
    by_chars = " & ".join("(" + " <-> ".join(_quote(t) for t in p) + ")" for p in phrases if p) or None
    return by_words, by_chars


def _literal(text: str) -> str:
    """An SQL string literal (standard-conforming: only ``'`` is special)."""
    return "'" + text.replace("'", "''") + "'"


def text_match(alias: str, query: TextQuery) -> tuple[str, str]:
    """The condition a row of ``alias`` (a messages or memories row) matches ``query`` on, and its
    rank (higher is better: words weigh twice the characters, as in SQLite's bm25 weights). The
    tsquery literals are inlined, escaped, so the statement's own placeholders stay in order."""
    words, chars = tsquery(query)
    match: list[str] = []
    rank: list[str] = []
    if words is not None:
        q = f"{_literal(words)}::tsquery"
        match.append(f"{alias}.words @@ {q}")
        rank.append(f"2.0 * ts_rank({alias}.words, {q}, 1)")
    if chars is not None:
        q = f"{_literal(chars)}::tsquery"
        match.append(f"{alias}.chars @@ {q}")
        rank.append(f"ts_rank({alias}.chars, {q}, 1)")
    if not match:
        return "FALSE", "0.0"
    return " OR ".join(match), " + ".join(rank)
