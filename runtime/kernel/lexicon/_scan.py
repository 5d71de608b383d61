"""The per-message scan: a fresh key's automata (or its few surfaces) to its occurrences.

Private to the lexicon package. ``DynamicLexicon`` rebuilds a stale key before calling these, so
every value an automaton yields is a current, non-suppressed term (see ``_store``): an occurrence
is made straight from it, with no owner lookup. ``match()`` turns occurrences into KeywordHits,
``score()`` into the spans the score is computed from.
"""

from __future__ import annotations

import ahocorasick

from runtime.kernel.lexicon._store import Entry

# One occurrence: (start, end) in characters of the normalised text, the surface found, its term.
Found = tuple[int, int, str, Entry]


def unit_found(automaton: ahocorasick.Automaton, encoded: str, out: list[Found]) -> None:
    """Append the occurrences of the code-unit automaton in ``encoded`` (from ``encode_flat``).

    A match ending on an odd byte straddles two code units and is no occurrence; one ending on an
    even byte is whole units, each one character, so ``end`` is the byte offset halved.
    """
    append = out.append
    for last, payload in automaton.iter(encoded):
        if not last & 1:
            continue
        if payload.__class__ is Entry:
            entry: Entry = payload
            surface = entry.text
        else:
            surface, entry = payload
        end = (last + 1) >> 1
        append((end - len(surface), end, surface, entry))


def char_found(automaton: ahocorasick.Automaton, normalized: str, out: list[Found]) -> None:
    """Append the occurrences of the astral automaton, which scans the normalised text itself."""
    for last, payload in automaton.iter(normalized):
        if payload.__class__ is Entry:
            entry: Entry = payload
            surface = entry.text
        else:
            surface, entry = payload
        out.append((last + 1 - len(surface), last + 1, surface, entry))


def few_found(few: tuple[tuple[str, Entry], ...], normalized: str, out: list[Found]) -> None:
    """Append the occurrences of a key of a few surfaces (the persona's names), found with str.find:
    cheaper than a pass of an automaton, and its offsets are already characters."""
    for surface, entry in few:
        start = normalized.find(surface)
        while start >= 0:
            out.append((start, start + len(surface), surface, entry))
            start = normalized.find(surface, start + 1)
