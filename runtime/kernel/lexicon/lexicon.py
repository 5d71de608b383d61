"""DynamicLexicon: keyword terms per (scope, owner), matched with Aho-Corasick, learned in batches.

design/0002 §7. Terms live under a :class:`LexiconKey`; a message is matched against the keys that
concern it (global, its group, its thread, the persona, running games, ...). Matching is a query:
it changes nothing. Learning (:meth:`DynamicLexicon.learn_batch`) runs off the per-message path:
it reinforces the terms a text contains and proposes new ones from segmentation.

Rules:

- a term or alias is normalised (:mod:`.normalize`) and needs 2 to 64 characters;
- a learned term starts at ``initial_weight`` (0.2); each text that contains it again adds
  ``repeat_step`` (0.1) up to 1 — one text counts once however often it repeats the term;
- an ACTIVE term not seen for ``t`` seconds keeps ``0.5 ** (t / half_life)`` of its weight and is
  deleted below ``delete_below``; PINNED terms keep their weight and are never deleted by decay nor
  evicted; SUPPRESSED terms never match, are never re-learned and stay until removed;
- a term past ``expires_at`` is deleted by :meth:`expire`, whatever its status: an expiry is an
  explicit deadline. Until then it matches (matching has no clock);
- each key holds at most ``max_terms`` (the global key ``max_terms_global``): a new term evicts the
  ACTIVE term of lowest weight (oldest first among equals); a learned newcomer may itself be the
  one evicted; an explicit :meth:`add` never is, and fails with :class:`LexiconFull` only when
  nothing in the key may be evicted.

Matching is plain substring matching on normalised text ("ai" occurs in "said"); see
:mod:`.scoring` for how overlapping hits count toward the score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter

from runtime.kernel.lexicon._scan import Found, char_found, few_found, unit_found
from runtime.kernel.lexicon._store import (
    Entry,
    EvictionQueue,
    KeyTable,
    KeyTerms,
    found_terms,
    lowest_active,
)
from runtime.kernel.lexicon.learning import (
    JiebaSegmenter,
    LearningBatch,
    PreparedText,
    Segmenter,
    prepare_batch,
)
from runtime.kernel.lexicon.normalize import MatchFolder, encode_flat, normalize_term
from runtime.kernel.lexicon.scoring import Ordered, score_ordered
from runtime.kernel.lexicon.settings import LexiconSettings
from runtime.kernel.lexicon.terms import (
    InvalidTerm,
    KeywordHit,
    KeywordSnapshot,
    KeywordTerm,
    LearnReport,
    LexiconChanges,
    LexiconFull,
    LexiconKey,
    LexiconScope,
    LexiconStatistics,
    TermStatus,
    renormalized,
    valid_or_none,
    valid_surface,
    valid_unit,
)

Disposer = Callable[[], bool]
_SPAN = itemgetter(3, 4)  # KeywordHit (start, end)
# tuple.__new__ skips the NamedTuple's Python-level __new__: half the cost of a hit.
_new_hit: Callable[[type[KeywordHit], tuple[LexiconKey, str, str, int, int, float, float]], KeywordHit]
_new_hit = tuple.__new__
LEARNED = "learned"
_MAX_PLANS = 16_384  # keys tuples remembered; past it the cache starts over


class DynamicLexicon:
    """Keyword terms per LexiconKey; see the module docstring for the rules."""

    def __init__(
        self, settings: LexiconSettings | None = None, *, segmenter: Segmenter | None = None
    ) -> None:
        self._settings = settings or LexiconSettings()
        self._segmenter: Segmenter = segmenter if segmenter is not None else JiebaSegmenter()
        self._keys: KeyTable = KeyTable()
        # keys tuple -> (that tuple, the table's version, its (key, store) pairs): see _plan().
        self._plans: dict[
            int, tuple[tuple[LexiconKey, ...], int, tuple[tuple[LexiconKey, KeyTerms], ...]]
        ] = {}
        self._rebuilds = 0
        self._matches = 0
        self._learned = 0
        self._evicted = 0
        self._decayed_away = 0
        self._expired = 0
        # key -> texts changed since take_changes(), in order of change (an ordered set)
        self._dirty: dict[LexiconKey, dict[str, None]] = {}
        self._folder = MatchFolder()

    @property
    def settings(self) -> LexiconSettings:
        return self._settings

    # -- registration --------------------------------------------------------------------------

    def add(
        self,
        key: LexiconKey,
        text: str,
        *,
        now: float,
        aliases: Iterable[str] = (),
        weight: float = 1.0,
        confidence: float = 1.0,
        source: str = "manual",
        status: TermStatus = TermStatus.ACTIVE,
        expires_at: float | None = None,
    ) -> KeywordTerm:
        """Add a term, or replace the term with the same normalised text (keeping its first_seen_at).

        Surfaces it claims are taken from other terms of the key (see ``KeyTerms.put``).
        Raises :class:`InvalidTerm` for a text or alias under two characters and
        :class:`LexiconFull` when the key is full of pinned and suppressed terms.
        """
        canonical = valid_surface(text)
        alias_set = dict.fromkeys(valid_surface(alias) for alias in aliases)
        alias_set.pop(canonical, None)
        store = self._keys.get(key)
        existing = store.entries.get(canonical) if store is not None else None
        term = KeywordTerm(
            text=canonical,
            aliases=tuple(alias_set),
            weight=valid_unit(weight),
            confidence=valid_unit(confidence),
            source=source,
            first_seen_at=existing.first_seen_at if existing is not None else now,
            last_seen_at=now,
            expires_at=expires_at,
            status=status,
        )
        if store is None:
            store = self._keys[key] = KeyTerms(key)
        if existing is None and len(store) >= self._cap(key):
            victim = lowest_active(store.entries.values())
            if victim is None:
                raise LexiconFull(f"{key}: {len(store)} terms, none may be evicted")
            store.remove(victim.text)
            self._evicted += 1
            self._touch(key, victim.text)
        self._touch(key, canonical, *self._put(store, Entry(term)))
        return term

    def register(
        self,
        key: LexiconKey,
        text: str,
        *,
        now: float,
        aliases: Iterable[str] = (),
        weight: float = 1.0,
        confidence: float = 1.0,
        source: str = "manual",
        status: TermStatus = TermStatus.ACTIVE,
        expires_at: float | None = None,
    ) -> Disposer:
        """:meth:`add`, returning a disposer that removes the term again (for a plugin's scope).

        The disposer is idempotent and returns whether it removed something.
        """
        term = self.add(
            key,
            text,
            now=now,
            aliases=aliases,
            weight=weight,
            confidence=confidence,
            source=source,
            status=status,
            expires_at=expires_at,
        )
        done = False

        def dispose() -> bool:
            nonlocal done
            if done:
                return False
            done = True
            return self.remove(key, term.text)

        return dispose

    def remove(self, key: LexiconKey, text: str) -> bool:
        """Remove the term whose normalised text is ``text``; whether there was one."""
        store = self._keys.get(key)
        canonical = normalize_term(text)
        if store is None or store.remove(canonical) is None:
            return False
        self._touch(key, canonical)
        if not store.entries:
            del self._keys[key]
        return True

    def clear(self, key: LexiconKey) -> int:
        """Remove every term of ``key`` (a thread pruned, a game over); how many there were."""
        store = self._keys.pop(key, None)
        if store is None:
            return 0
        self._touch(key, *store.entries)
        return len(store)

    def pin(self, key: LexiconKey, text: str, pinned: bool = True) -> KeywordTerm | None:
        """Pin (or unpin back to ACTIVE) an existing term; ``None`` when there is no such term."""
        if pinned:
            return self._set_status(key, text, TermStatus.PINNED, None)
        return self._set_status(key, text, TermStatus.ACTIVE, TermStatus.PINNED)

    def suppress(
        self, key: LexiconKey, text: str, suppressed: bool = True, *, now: float
    ) -> KeywordTerm | None:
        """Suppress a term so it never matches and is never re-learned; unsuppress to ACTIVE.

        Suppressing a text the key does not hold adds it suppressed, so learning will not propose
        it. Unsuppressing an unknown text returns ``None``.
        """
        canonical = normalize_term(text)
        store = self._keys.get(key)
        if suppressed and (store is None or store.entries.get(canonical) is None):
            return self.add(key, canonical, now=now, status=TermStatus.SUPPRESSED, source="suppressed")
        if suppressed:
            return self._set_status(key, canonical, TermStatus.SUPPRESSED, None)
        return self._set_status(key, canonical, TermStatus.ACTIVE, TermStatus.SUPPRESSED)

    def _set_status(
        self, key: LexiconKey, text: str, target: TermStatus, only_from: TermStatus | None
    ) -> KeywordTerm | None:
        store = self._keys.get(key)
        entry = None if store is None else store.entries.get(normalize_term(text))
        if store is None or entry is None:
            return None
        if entry.status is not target and (only_from is None or entry.status is only_from):
            if TermStatus.SUPPRESSED in (entry.status, target):
                store.touch()  # suppressed surfaces are left out of the automaton
            entry.status = target
            self._touch(key, entry.text)
        return entry.freeze()

    # -- queries ------------------------------------------------------------------------------

    def get(self, key: LexiconKey, text: str) -> KeywordTerm | None:
        store = self._keys.get(key)
        entry = None if store is None else store.owner(normalize_term(text))
        return None if entry is None else entry.freeze()

    def terms(self, key: LexiconKey) -> list[KeywordTerm]:
        store = self._keys.get(key)
        return [] if store is None else [entry.freeze() for entry in store.entries.values()]

    def list_keys(self) -> list[LexiconKey]:
        return list(self._keys)

    def match(self, text: str, keys: Iterable[LexiconKey]) -> list[KeywordHit]:
        """Every occurrence of every non-suppressed term of ``keys`` in ``text``.

        Sorted by start, then end, then the order of ``keys``; offsets index ``normalize_text(text)``.
        """
        hits: list[KeywordHit] = []
        for key, found in self._scan(text, keys):
            hits.extend(
                [
                    _new_hit(KeywordHit, (key, e.text, surface, start, end, e.weight, e.confidence))
                    for start, end, surface, e in found
                ]
            )
        # Stable: at one (start, end) the hits stay in the order of the keys.
        if len(hits) > 1:
            hits.sort(key=_SPAN)
        return hits

    def score(self, text: str, keys: Iterable[LexiconKey]) -> float:
        """The keyword score of ``text`` in [0, 1] (rules in :mod:`.scoring`): that of its hits,
        computed from the spans alone (no KeywordHit is built)."""
        spans: list[Ordered] = []
        for _key, found in self._scan(text, keys):
            spans.extend([(start, -end, -e.weight * e.confidence, e.text) for start, end, _s, e in found])
        return score_ordered(spans)

    def _scan(self, text: str, keys: Iterable[LexiconKey]) -> list[tuple[LexiconKey, list[Found]]]:
        """Each key's occurrences in ``text``, key after key in the order given (keys without one
        left out); stale keys are rebuilt first."""
        plan = self._plan(keys)
        if not plan:
            return []
        normalized = self._folder.fold(text)
        encoded = ""
        scan_chars = False
        self._matches += len(plan)
        out: list[tuple[LexiconKey, list[Found]]] = []
        for key, store in plan:
            if store.stale:
                self._rebuilds += 1
                store.automaton()
            found: list[Found] = []
            if store.few is not None:
                few_found(store.few, normalized, found)
            else:
                if not encoded:
                    encoded, scan_chars = encode_flat(normalized)
                if store.built is not None:
                    unit_found(store.built, encoded, found)
                if scan_chars and store.astral is not None:
                    char_found(store.astral, normalized, found)
            if found:
                out.append((key, found))
        return out

    def _plan(self, keys: Iterable[LexiconKey]) -> tuple[tuple[LexiconKey, KeyTerms], ...]:
        """The distinct keys that hold terms, with their stores, in the order given.

        Cached for a tuple of keys the caller keeps (the kernel keeps one per thread): a LexiconKey
        hashes in Python, and a message asks for four. The entry holds the tuple itself, so its id
        cannot be reused while cached; any change to which keys exist invalidates every entry.
        """
        table = self._keys
        cacheable = keys.__class__ is tuple
        if cacheable:
            cached = self._plans.get(id(keys))
            if cached is not None and cached[0] is keys and cached[1] == table.version:
                return cached[2]
        # A list comprehension, not a generator: 0.4 µs less for a caller passing a fresh list of keys.
        plan = tuple([(key, store) for key in dict.fromkeys(keys) if (store := table.get(key)) is not None])
        if cacheable:
            plans = self._plans
            if len(plans) >= _MAX_PLANS:
                plans.clear()
            plans[id(keys)] = (keys, table.version, plan)  # type: ignore[assignment]
        return plan

    # -- learning -----------------------------------------------------------------------------

    def learn(self, text: str, key: LexiconKey, now: float) -> list[KeywordTerm]:
        """Learn from one text: the terms it created or reinforced, as they now are."""
        tally = _Tally()
        for batch_key, prepared in self.prepare_learning({key: [text]}).texts:
            self._learn_key(batch_key, prepared, now, tally)
        store = self._keys.get(key)
        if store is None:
            return []
        return [entry.freeze() for entry in tally.touched if store.entries.get(entry.text) is entry]

    def learn_batch(self, texts_by_key: Mapping[LexiconKey, Sequence[str]], now: float) -> LearnReport:
        """Learn from many texts at once: :meth:`prepare_learning`, then :meth:`apply_learning`.

        At most ``learn_max_texts`` texts (the rest are skipped), each read up to
        ``learn_max_chars``; each key's automaton is built at most once.
        """
        return self.apply_learning(self.prepare_learning(texts_by_key), now)

    def prepare_learning(self, texts_by_key: Mapping[LexiconKey, Sequence[str]]) -> LearningBatch:
        """The slow half of learning (segmentation), which reads no lexicon state.

        It may run in a worker thread while matching goes on; :meth:`apply_learning` must then run
        where matching runs (the lexicon is not thread-safe).
        """
        return prepare_batch(texts_by_key, self._segmenter, self._settings)

    def apply_learning(self, batch: LearningBatch, now: float) -> LearnReport:
        """The fast half of learning: reinforce and create terms from a prepared batch."""
        tally = _Tally()
        for key, prepared in batch.texts:
            self._learn_key(key, prepared, now, tally)
        created = tuple(
            entry.freeze()
            for key, entry in tally.created
            if (store := self._keys.get(key)) is not None and store.entries.get(entry.text) is entry
        )
        return LearnReport(
            texts=tally.texts,
            skipped_texts=batch.skipped_texts,
            chars_read=batch.chars_read,
            created=created,
            reinforced=tally.reinforced,
            evicted=tally.evicted,
        )

    def _learn_key(self, key: LexiconKey, texts: Iterable[PreparedText], now: float, tally: _Tally) -> None:
        settings = self._settings
        store = self._keys.get(key)
        # Built once for the whole batch: terms this batch creates are found through owner() on the
        # candidates, and found_terms() skips surfaces that are gone.
        automata = None if store is None else store.current_automata()
        cap = self._cap(key)
        evictions: EvictionQueue | None = None  # built when the key first overflows in this batch
        max_new = settings.learn_max_new_per_text
        initial_weight, initial_confidence = settings.initial_weight, settings.initial_confidence
        suppressed = TermStatus.SUPPRESSED
        for text in texts:
            tally.texts += 1
            seen: dict[str, Entry] = {}
            if store is not None and automata is not None:
                for entry in found_terms(store, automata, text.normalized):
                    seen[entry.text] = entry
            fresh: list[str] = []
            for word in text.candidates:
                owner = None if store is None else store.owner(word)
                if owner is None:
                    if len(fresh) < max_new:
                        fresh.append(word)
                elif owner.status is not suppressed:
                    seen[owner.text] = owner
            for entry in seen.values():
                self._reinforce(entry, now)
                tally.reinforced += 1
                tally.touched.append(entry)
                if evictions is not None:
                    evictions.push(entry)
            self._touch(key, *seen)
            for word in fresh:
                if store is None:
                    store = self._keys[key] = KeyTerms(key)
                entry = Entry.learned(word, initial_weight, initial_confidence, LEARNED, now)
                self._put(store, entry)
                self._learned += 1
                tally.created.append((key, entry))
                tally.touched.append(entry)
                if evictions is not None:
                    evictions.push(entry)
                if len(store) > cap:
                    if evictions is None:
                        evictions = EvictionQueue(store.entries.values())
                    victim = evictions.pop(store)
                    if victim is not None:
                        store.remove(victim.text)
                        self._evicted += 1
                        tally.evicted += 1
                        self._touch(key, victim.text)
            self._touch(key, *fresh)

    def _put(self, store: KeyTerms, entry: Entry) -> list[str]:
        for surface in entry.surfaces():
            self._folder.note(surface)
        return store.put(entry)

    def _reinforce(self, entry: Entry, now: float) -> None:
        settings = self._settings
        if entry.status is not TermStatus.PINNED:
            self._decay_entry(entry, now)
            entry.weight = min(1.0, entry.weight + settings.repeat_step)
            entry.confidence = min(1.0, entry.confidence + settings.confidence_step)
            entry.decayed_at = now
        entry.last_seen_at = max(entry.last_seen_at, now)

    # -- maintenance --------------------------------------------------------------------------

    def decay(self, now: float, keys: Iterable[LexiconKey] | None = None) -> int:
        """Decay ACTIVE terms by the time since they were last seen; delete those under the threshold.

        ``keys`` limits the work to some keys (a caller may spread a decay over several ticks:
        500,000 terms take a few hundred milliseconds). Returns how many terms were deleted.
        """
        threshold = self._settings.delete_below
        removed = 0
        for key, store in self._stores(keys):
            doomed: list[str] = []
            decayed: list[str] = []
            for entry in store.entries.values():
                if entry.status is TermStatus.ACTIVE and self._decay_entry(entry, now):
                    decayed.append(entry.text)
                    if entry.weight < threshold:
                        doomed.append(entry.text)
            self._touch(key, *decayed)
            removed += self._drop(key, store, doomed)
        self._decayed_away += removed
        return removed

    def _decay_entry(self, entry: Entry, now: float) -> bool:
        """Bring ``entry``'s weight up to ``now``; whether it changed."""
        since = entry.last_seen_at if entry.decayed_at is None else max(entry.decayed_at, entry.last_seen_at)
        if now <= since:
            return False
        entry.weight *= 0.5 ** ((now - since) / self._settings.half_life)
        entry.decayed_at = now
        return True

    def expire(self, now: float, keys: Iterable[LexiconKey] | None = None) -> int:
        """Delete every term (of ``keys``, or all) whose ``expires_at`` has come, whatever its
        status; how many."""
        removed = 0
        for key, store in self._stores(keys):
            doomed = [
                entry.text
                for entry in store.entries.values()
                if entry.expires_at is not None and entry.expires_at <= now
            ]
            removed += self._drop(key, store, doomed)
        self._expired += removed
        return removed

    def _stores(self, keys: Iterable[LexiconKey] | None) -> list[tuple[LexiconKey, KeyTerms]]:
        if keys is None:
            return list(self._keys.items())
        return [(key, store) for key in dict.fromkeys(keys) if (store := self._keys.get(key)) is not None]

    def _drop(self, key: LexiconKey, store: KeyTerms, texts: list[str]) -> int:
        for text in texts:
            store.remove(text)
        self._touch(key, *texts)
        if not store.entries:
            del self._keys[key]
        return len(texts)

    # -- persistence and statistics -----------------------------------------------------------

    def snapshot(self) -> list[KeywordSnapshot]:
        """Every key's terms, suppressed ones included, as frozen values."""
        return [
            KeywordSnapshot(key, tuple(entry.freeze() for entry in store.entries.values()))
            for key, store in self._keys.items()
        ]

    def restore(self, snapshots: Iterable[KeywordSnapshot]) -> int:
        """Put the keys of ``snapshots`` back as they were; other keys are left alone.

        Terms are normalised again and the caps apply: a key over its cap loses its lowest ACTIVE
        terms. A stored row that is no longer a valid term (a bad text, weight or confidence) is
        skipped rather than failing the start, and an invalid alias is dropped; returns how many
        terms were skipped. What is restored counts as already saved: only what the cap, the
        skipping or renormalising changed shows up in :meth:`take_changes`.
        """
        skipped = 0
        for snapshot in snapshots:
            key = snapshot.key
            store = KeyTerms(key)
            for term in snapshot.terms:
                try:
                    text = valid_surface(term.text)
                    valid_unit(term.weight)
                    valid_unit(term.confidence)
                except InvalidTerm:
                    skipped += 1
                    self._touch(key, term.text)
                    continue
                aliases = tuple(dict.fromkeys(alias for alias in map(valid_or_none, term.aliases) if alias))
                restored = renormalized(term, text, aliases)
                if restored is not term:
                    self._touch(key, term.text, text)
                self._touch(key, *self._put(store, Entry(restored)))
            cap = self._cap(key)
            while len(store) > cap and (victim := lowest_active(store.entries.values())) is not None:
                store.remove(victim.text)
                self._touch(key, victim.text)
            if store.entries:
                self._keys[key] = store
            else:
                self._keys.pop(key, None)
        return skipped

    def take_changes(self) -> LexiconChanges:
        """Terms changed and removed since the last call (or since start), then forget them.

        Persistence saves ``changed`` and deletes ``removed`` instead of writing a whole snapshot
        (freezing 500,000 terms takes seconds). A decay changes every ACTIVE term it ages.
        """
        changed: list[tuple[LexiconKey, KeywordTerm]] = []
        removed: list[tuple[LexiconKey, str]] = []
        for key, texts in self._dirty.items():
            store = self._keys.get(key)
            for text in texts:
                entry = None if store is None else store.entries.get(text)
                if entry is None:
                    removed.append((key, text))
                else:
                    changed.append((key, entry.freeze()))
        self._dirty = {}
        return LexiconChanges(tuple(changed), tuple(removed))

    def _touch(self, key: LexiconKey, *texts: str) -> None:
        if texts:
            dirty = self._dirty.get(key)
            if dirty is None:
                dirty = self._dirty[key] = {}
            dirty.update(dict.fromkeys(texts))

    def statistics(self) -> LexiconStatistics:
        """Counts over every key (a walk over all terms: for status pages, not per message)."""
        pinned = suppressed = terms = 0
        by_scope: dict[str, int] = dict.fromkeys((scope.value for scope in LexiconScope), 0)
        automata = 0
        for key, store in self._keys.items():
            terms += len(store)
            by_scope[key.scope.value] += len(store)
            automata += store.built is not None or store.astral is not None  # keys with a built automaton
            for entry in store.entries.values():
                if entry.status is TermStatus.PINNED:
                    pinned += 1
                elif entry.status is TermStatus.SUPPRESSED:
                    suppressed += 1
        return LexiconStatistics(
            keys=len(self._keys),
            terms=terms,
            pinned=pinned,
            suppressed=suppressed,
            learned=self._learned,
            automata=automata,
            rebuilds=self._rebuilds,
            matches=self._matches,
            evicted=self._evicted,
            decayed_away=self._decayed_away,
            expired=self._expired,
            terms_by_scope=tuple(by_scope.items()),
        )

    def _cap(self, key: LexiconKey) -> int:
        if key.scope is LexiconScope.GLOBAL:
            return self._settings.max_terms_global
        return self._settings.max_terms


class _Tally:
    __slots__ = ("created", "evicted", "reinforced", "texts", "touched")

    def __init__(self) -> None:
        self.texts = 0
        self.reinforced = 0
        self.evicted = 0
        self.created: list[tuple[LexiconKey, Entry]] = []
        self.touched: list[Entry] = []
