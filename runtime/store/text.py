"""Text for the full-text indexes: jieba at write time and at query time, the same rules in both backends.

FTS5's trigram tokenizer misses 1–2-character Chinese words, and its ``unicode61`` tokenizer sees a
whole run of Chinese as one token. So the store indexes two columns it prepares itself:

- ``words``: jieba's ``cut_for_search`` tokens (lower-cased), space-separated. Ranking leans on it.
  jieba's HMM guesser for unknown words is off (a third faster); ``chars`` covers what it would find.
- ``chars``: every CJK (non-ASCII) character as its own token, runs of ASCII letters and runs of digits
  as words (``iphone15`` is ``iphone 15``), in
  order. A query phrase over it is an exact substring match, so a word jieba cut differently in the
  document than in the query ("研究生命" vs "生命") is still found.

A query is segmented the same way; a document matches when every query term occurs in ``words`` or
every query word occurs as a phrase in ``chars``. Function words (的, 了, 吗...) are dropped from a
query unless nothing else is left. ``用Python写爬虫`` is found by ``python``, ``爬虫``, ``写`` and
``用python写``.

The cutting itself is :mod:`runtime.store.segmenter` (jieba, or its compiled twin where installed:
the same tokens). Loading takes about a second: call :func:`warm_up` off the event loop at start.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from runtime.store import segmenter

# QQ caps a message near 4,500 characters; a pasted novel is stored whole but indexed only this far.
INDEX_MAX_CHARS = 10_000

# Letters and digits apart, so "iphone" finds "iphone15" and "15" finds it too; any other letter or
# digit (``[^\W_]`` is exactly ``str.isalnum``) alone. ASCII punctuation and symbols are skipped.
_CHAR_TOKEN = re.compile(r"[a-z]+|[0-9]+|[^\W_]")
_ASCII_ALNUM = re.compile(r"[a-z0-9]")

# Dropped from queries (not from documents) so "灰风的设计" can find "灰风架构设计".
_STOPWORDS = frozenset(
    "的了是在和与及或吗呢吧啊呀哦嘛么也就都又还把被给着过地得这那有没不我你他她它请"
).union(
    ("这个", "那个", "一个", "没有", "我们", "你们", "他们", "什么", "怎么"),
    ("a", "an", "the", "of", "to", "in", "on", "is", "are", "and", "or"),
)


def warm_up() -> None:
    """Load the segmenter's dictionaries now (blocking, ~1 s) rather than on the first write."""
    segmenter.warm_up()


def char_tokens(text: str) -> list[str]:
    """ASCII alphanumeric runs as words, every other letter or digit as its own token; lower-cased."""
    return _CHAR_TOKEN.findall(text.lower())


def _word_tokens(tokens: Iterable[str]) -> list[str]:
    # One pass, no call per token: the writer thread holds the GIL for this part of indexing.
    words: list[str] = []
    for token in tokens:
        lowered = token.lower()
        if _ASCII_ALNUM.search(lowered) is not None:
            # A token with ASCII ("python3.11", "u盘") becomes the parts FTS5's tokenizer would see.
            words += _CHAR_TOKEN.findall(lowered)
        elif lowered.isalnum():  # a Chinese word stays whole
            words.append(lowered)
        else:  # ... without its punctuation, emoji or spaces (a token of only those is dropped)
            joined = "".join(_CHAR_TOKEN.findall(lowered))
            if joined:
                words.append(joined)
    return words


@dataclass(frozen=True, slots=True)
class IndexedText:
    words: str
    chars: str


def index_text(text: str) -> IndexedText:
    """The two indexed columns for a document (its first ``INDEX_MAX_CHARS`` characters)."""
    text = text[:INDEX_MAX_CHARS]
    words = _word_tokens(segmenter.cut_for_search(text))
    return IndexedText(words=" ".join(words), chars=" ".join(char_tokens(text)))


@dataclass(frozen=True, slots=True)
class TextQuery:
    """A segmented query: ``words`` for the words column, ``phrases`` (char-token tuples) for chars."""

    words: tuple[str, ...]
    phrases: tuple[tuple[str, ...], ...]

    @property
    def empty(self) -> bool:
        return not self.words and not self.phrases


def _drop_stopwords(tokens: list[str]) -> list[str]:
    kept = [t for t in tokens if t not in _STOPWORDS]
    return kept or tokens


@lru_cache(maxsize=1024)
def parse_query(query: str) -> TextQuery:
    searched = _word_tokens(segmenter.cut_for_search(query))
    words = _drop_stopwords(list(dict.fromkeys(searched)))
    precise = _drop_stopwords([t.lower() for t in segmenter.cut(query) if char_tokens(t)])
    phrases = tuple(dict.fromkeys(tuple(char_tokens(t)) for t in precise))
    return TextQuery(words=tuple(words), phrases=phrases)


def quote_token(token: str) -> str:
    """An FTS5 string literal: the tokenizer sees exactly ``token``, no query syntax."""
    return '"' + token.replace('"', '""') + '"'


def fts_match(query: TextQuery) -> str:
    """The FTS5 MATCH expression for a two-column (``words``, ``chars``) table."""
    words = " AND ".join(quote_token(w) for w in query.words)
    phrases = " AND ".join(quote_token(" ".join(p)) for p in query.phrases)
    parts = []
    if words:
        parts.append(f"(words : ({words}))")
    if phrases:
        parts.append(f"(chars : ({phrases}))")
    return " OR ".join(parts)


def _contains(haystack: list[str], needle: tuple[str, ...]) -> bool:
    k = len(needle)
    if k == 0:
        return False
    first = needle[0]
    return any(
        haystack[i] == first and tuple(haystack[i : i + k]) == needle for i in range(len(haystack) - k + 1)
    )


def match_score(query: TextQuery, doc: IndexedText) -> float:
    """The in-memory backend's equivalent of the FTS match: 0.0 for no match, higher is better."""
    words = doc.words.split()
    word_set = set(words)
    by_words = bool(query.words) and all(w in word_set for w in query.words)
    chars = doc.chars.split()
    by_chars = bool(query.phrases) and all(_contains(chars, p) for p in query.phrases)
    if not (by_words or by_chars):
        return 0.0
    hits = sum(words.count(w) for w in query.words)
    # Shorter documents with more hits rank first, as bm25 would have it.
    return (1.0 + 2.0 * hits) / (1.0 + 0.05 * len(chars))
