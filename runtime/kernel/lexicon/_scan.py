"""The per-message scan: a fresh key's automata (or its few surfaces) to KeywordHits, or to the
spans the score is computed from.

Private to the lexicon package. ``DynamicLexicon.match`` rebuilds a stale key before calling
these, so every value an automaton yields is a current, non-suppressed term (see ``_store``):
a hit is made straight from it, with no owner lookup and no intermediate tuple.
"""

from __future__ import annotations

from collections.abc import Callable

import ahocorasick

from runtime.kernel.lexicon._store import Entry
from runtime.kernel.lexicon.scoring import Ordered
from runtime.kernel.lexicon.terms import KeywordHit, LexiconKey

# tuple.__new__ skips the NamedTuple's Python-level __new__: half the cost of a hit.
_new_hit: Callable[[type[KeywordHit], tuple[LexiconKey, str, str, int, int, float, float]], KeywordHit]
_new_hit = tuple.__new__


def unit_hits(
    key: LexiconKey, automaton: ahocorasick.Automaton, encoded: str, hits: list[KeywordHit]
) -> None:
    """Append the hits of the code-unit automaton in ``encoded`` (from ``encode_flat``).

    A match ending on an odd byte straddles two code units and is no occurrence; one ending on an
    even byte is whole units, each one character, so ``end`` is the byte offset halved.
    """
    append = hits.append
    for last, payload in automaton.iter(encoded):
        if not last & 1:
            continue
        if payload.__class__ is Entry:
            entry: Entry = payload
            surface = entry.text
        else:
            surface, entry = payload
        end = (last + 1) >> 1
        append(
            _new_hit(
                KeywordHit,
                (key, entry.text, surface, end - len(surface), end, entry.weight, entry.confidence),
            )
        )


def char_hits(
    key: LexiconKey, automaton: ahocorasick.Automaton, normalized: str, hits: list[KeywordHit]
) -> None:
    """Append the hits of the astral automaton, which scans the normalised text itself."""
    for last, payload in automaton.iter(normalized):
        if payload.__class__ is Entry:
            entry: Entry = payload
            surface = entry.text
        else:
            surface, entry = payload
        end = last + 1
        hits.append(
            _new_hit(
                KeywordHit,
                (key, entry.text, surface, end - len(surface), end, entry.weight, entry.confidence),
            )
        )


def few_hits(
    key: LexiconKey, few: tuple[tuple[str, Entry], ...], normalized: str, hits: list[KeywordHit]
) -> None:
    """Append the hits of a key of a few surfaces (the persona's names), found with str.find:
    cheaper than a pass of an automaton, and its offsets are already characters."""
    for surface, entry in few:
        start = normalized.find(surface)
        while start >= 0:
            hits.append(
                _new_hit(
                    KeywordHit,
                    (key, entry.text, surface, start, start + len(surface), entry.weight, entry.confidence),
                )
            )
            start = normalized.find(surface, start + 1)


# -- the same scans for score(): spans as scoring.Ordered, with no KeywordHit to build ----------------


def unit_spans(key: LexiconKey, automaton: ahocorasick.Automaton, encoded: str, spans: list[Ordered]) -> None:
    """:func:`unit_hits` as ``(start, -end, -value, term)``."""
    append = spans.append
    for last, payload in automaton.iter(encoded):
        if not last & 1:
            continue
        if payload.__class__ is Entry:
            entry: Entry = payload
            surface = entry.text
        else:
            surface, entry = payload
        end = (last + 1) >> 1
        append((end - len(surface), -end, -entry.weight * entry.confidence, entry.text))


def char_spans(
    key: LexiconKey, automaton: ahocorasick.Automaton, normalized: str, spans: list[Ordered]
) -> None:
    """:func:`char_hits` as ``(start, -end, -value, term)``."""
    for last, payload in automaton.iter(normalized):
        if payload.__class__ is Entry:
            entry: Entry = payload
            surface = entry.text
        else:
            surface, entry = payload
        spans.append((last + 1 - len(surface), -last - 1, -entry.weight * entry.confidence, entry.text))


def few_spans(
    key: LexiconKey, few: tuple[tuple[str, Entry], ...], normalized: str, spans: list[Ordered]
) -> None:
    """:func:`few_hits` as ``(start, -end, -value, term)``."""
    for surface, entry in few:
        start = normalized.find(surface)
        while start >= 0:
            spans.append((start, -start - len(surface), -entry.weight * entry.confidence, entry.text))
            start = normalized.find(surface, start + 1)
