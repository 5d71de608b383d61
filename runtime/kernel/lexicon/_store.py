"""The terms of one LexiconKey, their automaton and the scan over it, and the eviction queue
(private to the lexicon package).

Each key has its own automaton, so a change in one group rebuilds only that group's. A change marks
the automaton stale; it is rebuilt on the next match, from scratch, and swapped in whole: a
pyahocorasick automaton is never mutated after it is built, never pickled, and every search takes a
fresh ``iter()`` (reusing an iterator through ``.set()`` on text with emoji crashes pyahocorasick
2.3.1).

Every surface (a term's text or one of its aliases) belongs to exactly one term of the key, so a
match resolves to one term. The automaton's value for a surface is the surface string itself
(the very object the term holds, so it costs no memory), or ``(surface, byte_length)`` for the rare
surface with an astral character, whose length in code units differs from its length in characters.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

import ahocorasick

from runtime.kernel.lexicon.normalize import encode_units, unit_length
from runtime.kernel.lexicon.terms import KeywordTerm, LexiconKey, TermStatus

Payload = str | tuple[str, int]
# Up to this many surfaces, a key is matched with str.find rather than a pass of its automaton.
FEW_SURFACES = 4


class Entry:
    """A term while the lexicon holds it: mutable so learning and decay update it in place."""

    __slots__ = (
        "aliases",
        "confidence",
        "decayed_at",
        "expires_at",
        "first_seen_at",
        "last_seen_at",
        "source",
        "status",
        "text",
        "weight",
    )

    def __init__(self, term: KeywordTerm) -> None:
        self.text = term.text
        self.aliases = term.aliases
        self.weight = term.weight
        self.confidence = term.confidence
        self.source = term.source
        self.first_seen_at = term.first_seen_at
        self.last_seen_at = term.last_seen_at
        self.expires_at = term.expires_at
        self.status = term.status
        self.decayed_at = term.decayed_at

    @classmethod
    def learned(cls, text: str, weight: float, confidence: float, source: str, now: float) -> Entry:
        """A term learning just found (no intermediate KeywordTerm: batches make thousands)."""
        entry = cls.__new__(cls)
        entry.text = text
        entry.aliases = ()
        entry.weight = weight
        entry.confidence = confidence
        entry.source = source
        entry.first_seen_at = now
        entry.last_seen_at = now
        entry.expires_at = None
        entry.status = TermStatus.ACTIVE
        entry.decayed_at = None
        return entry

    def freeze(self) -> KeywordTerm:
        return KeywordTerm(  # positional: snapshots freeze every term, and keywords cost more
            self.text,
            self.aliases,
            self.weight,
            self.confidence,
            self.source,
            self.first_seen_at,
            self.last_seen_at,
            self.expires_at,
            self.status,
            self.decayed_at,
        )

    def surfaces(self) -> Iterator[str]:
        yield self.text
        yield from self.aliases


class KeyTerms:
    """The terms of one key, their alias index and their (lazily rebuilt) automaton."""

    __slots__ = ("aliases", "built", "entries", "few", "key", "stale")

    def __init__(self, key: LexiconKey) -> None:
        self.key = key
        self.entries: dict[str, Entry] = {}
        self.aliases: dict[str, str] = {}  # alias -> the text of the term that owns it
        # Plain attributes, not properties: the per-message path reads them for every key.
        self.built: ahocorasick.Automaton | None = None  # as last built, possibly stale
        # With at most FEW_SURFACES surfaces, built with the automaton: (surface, term) pairs that
        # matching finds with str.find instead.
        self.few: tuple[tuple[str, Entry], ...] | None = None
        self.stale = False

    def __len__(self) -> int:
        return len(self.entries)

    def owner(self, surface: str) -> Entry | None:
        """The term that owns ``surface`` (its text or one of its aliases), if any."""
        entry = self.entries.get(surface)
        if entry is not None:
            return entry
        text = self.aliases.get(surface)
        return None if text is None else self.entries[text]

    def put(self, entry: Entry) -> list[str]:
        """Insert or replace ``entry``; surfaces it claims are taken from other terms.

        A term whose text is claimed is absorbed (removed); a term that only loses an alias keeps
        the rest of itself. Returns the texts of the other terms changed either way.
        """
        others: list[str] = []
        old = self.entries.get(entry.text)
        if old is not None:
            self._drop(old)
        for surface in entry.surfaces():
            other = self.owner(surface)
            if other is None:
                continue
            others.append(other.text)
            if other.text == surface:
                self._drop(other)
            else:
                other.aliases = tuple(alias for alias in other.aliases if alias != surface)
                del self.aliases[surface]
        self.entries[entry.text] = entry
        for alias in entry.aliases:
            self.aliases[alias] = entry.text
        self.stale = True
        return others

    def remove(self, text: str) -> Entry | None:
        entry = self.entries.get(text)
        if entry is not None:
            self._drop(entry)
            self.stale = True
        return entry

    def _drop(self, entry: Entry) -> None:
        del self.entries[entry.text]
        for alias in entry.aliases:
            if self.aliases.get(alias) == entry.text:
                del self.aliases[alias]

    def touch(self) -> None:
        """Mark the automaton stale (a status changed in place)."""
        self.stale = True

    def automaton(self) -> ahocorasick.Automaton | None:
        """The automaton over every non-suppressed surface, rebuilt first if stale."""
        if self.stale:
            self.built = _build(self.entries.values())
            self.few = _few(self.entries.values())
            self.stale = False
        return self.built

    def current_automaton(self) -> ahocorasick.Automaton | None:
        """The automaton as last built, possibly stale (learning resolves hits through owner())."""
        if self.built is None and self.stale:
            return self.automaton()
        return self.built


def _few(entries: Iterable[Entry]) -> tuple[tuple[str, Entry], ...] | None:
    """The (surface, term) pairs of the non-suppressed terms, if there are at most FEW_SURFACES."""
    pairs: list[tuple[str, Entry]] = []
    for entry in entries:
        if entry.status is TermStatus.SUPPRESSED:
            continue
        for surface in entry.surfaces():
            pairs.append((surface, entry))
            if len(pairs) > FEW_SURFACES:
                return None
    return tuple(pairs)


def _build(entries: Iterable[Entry]) -> ahocorasick.Automaton | None:
    automaton = ahocorasick.Automaton(ahocorasick.STORE_ANY)
    words = 0
    for entry in entries:
        if entry.status is TermStatus.SUPPRESSED:
            continue
        for surface in entry.surfaces():
            payload: Payload = surface
            units = unit_length(surface)
            if units != len(surface):
                payload = (surface, 2 * units)
            automaton.add_word(encode_units(surface), payload)
            words += 1
    if words == 0:
        return None
    automaton.make_automaton()
    return automaton


def occurrences(
    store: KeyTerms, automaton: ahocorasick.Automaton | None, encoded: str
) -> list[tuple[int, int, str, Entry]]:
    """Occurrences of ``store``'s surfaces as (start byte, end byte, surface, term).

    Latin-1 "bytes" of the UTF-16 encoding: a match must start on an even byte, else it straddles
    two code units and is not an occurrence. Surfaces no longer owned, or suppressed, are skipped
    (a stale automaton during learning may still hold them). This is the per-message loop: the
    owner lookup is inlined.
    """
    if automaton is None:
        return []
    found: list[tuple[int, int, str, Entry]] = []
    entries = store.entries
    aliases = store.aliases
    suppressed = TermStatus.SUPPRESSED
    for last, payload in automaton.iter(encoded):
        if payload.__class__ is str:
            surface: str = payload
            start = last + 1 - (len(payload) << 1)
        else:
            surface, length = payload
            start = last + 1 - length
        if start & 1:
            continue
        entry = entries.get(surface)
        if entry is None:
            owner_text = aliases.get(surface)
            entry = None if owner_text is None else entries.get(owner_text)
            if entry is None:
                continue
        if entry.status is not suppressed:
            found.append((start, last + 1, surface, entry))
    return found


class EvictionQueue:
    """The ACTIVE terms of one key by (weight, last seen, text), lowest first, for one batch.

    A full key evicts once per new word; scanning the key each time made a batch of new words
    quadratic. Records go stale when learning changes a term: every change pushes a fresh record,
    and :meth:`pop` skips records that no longer describe their term.
    """

    __slots__ = ("_heap",)

    def __init__(self, entries: Iterable[Entry]) -> None:
        self._heap = [
            (entry.weight, entry.last_seen_at, entry.text)
            for entry in entries
            if entry.status is TermStatus.ACTIVE
        ]
        heapq.heapify(self._heap)

    def push(self, entry: Entry) -> None:
        if entry.status is TermStatus.ACTIVE:
            heapq.heappush(self._heap, (entry.weight, entry.last_seen_at, entry.text))

    def pop(self, store: KeyTerms) -> Entry | None:
        while self._heap:
            weight, last_seen_at, text = heapq.heappop(self._heap)
            entry = store.entries.get(text)
            if (
                entry is not None
                and entry.status is TermStatus.ACTIVE
                and entry.weight == weight
                and entry.last_seen_at == last_seen_at
            ):
                return entry
        return None


def lowest_active(entries: Iterable[Entry]) -> Entry | None:
    """The ACTIVE term to evict first: lowest weight, then least recently seen."""
    victim: Entry | None = None
    for entry in entries:
        if entry.status is TermStatus.ACTIVE and (
            victim is None or (entry.weight, entry.last_seen_at) < (victim.weight, victim.last_seen_at)
        ):
            victim = entry
    return victim
