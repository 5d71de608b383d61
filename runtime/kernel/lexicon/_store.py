"""The terms of one LexiconKey, their automaton and the scan over it, and the eviction queue
(private to the lexicon package).

Each key has its own automaton, so a change in one group rebuilds only that group's. A change marks
the automaton stale; it is rebuilt on the next match, from scratch, and swapped in whole: a
pyahocorasick automaton is never mutated after it is built, never pickled, and every search takes a
fresh ``iter()`` (reusing an iterator through ``.set()`` on text with emoji crashes pyahocorasick
2.3.1).

Every surface (a term's text or one of its aliases) belongs to exactly one term of the key, so a
match resolves to one term. Surfaces whose characters are each one UTF-16 unit (nearly all; see
``is_flat``) go into the code-unit automaton (see :mod:`.normalize`), whose value for a term's own
text is the term's :class:`Entry` itself and for an alias ``(alias, entry)``: a hit needs no
lookup, and the values cost no memory. The rare surfaces holding an astral character go into a
second, plain-``str`` automaton, scanned only over text that holds one too.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

import ahocorasick

from runtime.kernel.lexicon.normalize import encode_flat, encode_units, is_flat
from runtime.kernel.lexicon.terms import KeywordTerm, LexiconKey, TermStatus

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

    __slots__ = ("aliases", "astral", "built", "entries", "few", "key", "stale")

    def __init__(self, key: LexiconKey) -> None:
        self.key = key
        self.entries: dict[str, Entry] = {}
        self.aliases: dict[str, str] = {}  # alias -> the text of the term that owns it
        # Plain attributes, not properties: the per-message path reads them for every key.
        self.built: ahocorasick.Automaton | None = None  # as last built, possibly stale
        # Built with it: the surfaces holding an astral character, over plain str (or None).
        self.astral: ahocorasick.Automaton | None = None
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
        """The code-unit automaton over every non-suppressed surface, rebuilt first if stale
        (with :attr:`astral` and :attr:`few`)."""
        if self.stale:
            self.built, self.astral = _build(self.entries.values())
            self.few = _few(self.entries.values())
            self.stale = False
        return self.built

    def current_automata(self) -> tuple[ahocorasick.Automaton | None, ahocorasick.Automaton | None]:
        """The automata as last built, possibly stale (learning resolves hits through owner());
        built first if they never were."""
        if self.built is None and self.astral is None and self.stale:
            self.automaton()
        return self.built, self.astral


class KeyTable(dict[LexiconKey, KeyTerms]):
    """The lexicon's key -> store table; ``version`` changes whenever a key comes or goes."""

    __slots__ = ("version",)

    def __init__(self) -> None:
        super().__init__()
        self.version = 0

    def __setitem__(self, key: LexiconKey, value: KeyTerms) -> None:
        self.version += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: LexiconKey) -> None:
        self.version += 1
        super().__delitem__(key)

    def pop(self, key: LexiconKey, default: KeyTerms | None = None) -> KeyTerms | None:  # type: ignore[override]
        self.version += 1
        return super().pop(key, default)

    def clear(self) -> None:
        self.version += 1
        super().clear()


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


def _build(
    entries: Iterable[Entry],
) -> tuple[ahocorasick.Automaton | None, ahocorasick.Automaton | None]:
    """The code-unit automaton and the astral automaton over the non-suppressed surfaces."""
    units = ahocorasick.Automaton(ahocorasick.STORE_ANY)
    chars = ahocorasick.Automaton(ahocorasick.STORE_ANY)
    for entry in entries:
        if entry.status is TermStatus.SUPPRESSED:
            continue
        _add(units, chars, entry.text, entry)
        for alias in entry.aliases:
            _add(units, chars, alias, (alias, entry))
    return _made(units), _made(chars)


def _add(units: ahocorasick.Automaton, chars: ahocorasick.Automaton, surface: str, value: object) -> None:
    if is_flat(surface):
        units.add_word(encode_units(surface), value)
    else:
        chars.add_word(surface, value)


def _made(automaton: ahocorasick.Automaton) -> ahocorasick.Automaton | None:
    if len(automaton) == 0:
        return None
    automaton.make_automaton()
    return automaton


def found_terms(
    store: KeyTerms,
    automata: tuple[ahocorasick.Automaton | None, ahocorasick.Automaton | None],
    normalized: str,
) -> list[Entry]:
    """The non-suppressed terms of ``store`` with a surface in ``normalized``, once per occurrence.

    For learning, whose automata may be stale: a hit counts only if its surface still belongs to a
    term of the key (through :meth:`KeyTerms.owner`), and that term is not suppressed.
    """
    units, chars = automata
    surfaces: list[str] = []
    encoded, scan_chars = encode_flat(normalized)
    if units is not None:
        surfaces += [_surface(payload) for last, payload in units.iter(encoded) if last & 1]
    if chars is not None and scan_chars:
        surfaces += [_surface(payload) for _, payload in chars.iter(normalized)]
    found: list[Entry] = []
    for surface in surfaces:
        entry = store.owner(surface)
        if entry is not None and entry.status is not TermStatus.SUPPRESSED:
            found.append(entry)
    return found


def _surface(payload: Entry | tuple[str, Entry]) -> str:
    return payload.text if isinstance(payload, Entry) else payload[0]


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
