"""The lexicon's values: scopes and keys, terms, hits, snapshots, reports and statistics.

Faults (each a :class:`runtime.kernel.errors.KernelError`)::

    LexiconError             base of the lexicon's faults
    ├── InvalidTerm          a term or alias is empty or shorter than two characters after normalisation
    └── LexiconFull          a key is at its cap and every term in it is pinned or suppressed
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from runtime.kernel.errors import KernelError
from runtime.kernel.lexicon.normalize import normalize_term


class LexiconScope(StrEnum):
    """Who a set of terms belongs to (design/0002 §7)."""

    GLOBAL = "global"
    GROUP = "group"
    THREAD = "thread"
    PERSONA = "persona"
    ACTIVITY = "activity"
    GAME = "game"
    TOOL = "tool"


@dataclass(frozen=True, slots=True)
class LexiconKey:
    """One set of terms: a scope and its owner (a chat id, thread id, persona, game name, ...)."""

    scope: LexiconScope
    owner: str = ""

    def __str__(self) -> str:
        return f"{self.scope.value}:{self.owner}"


GLOBAL_KEY = LexiconKey(LexiconScope.GLOBAL, "")
# A keyword, not a passage: longer "terms" would only bloat the automaton (two nodes a character).
MAX_TERM_CHARS = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


class TermStatus(StrEnum):
    """ACTIVE terms decay and may be evicted; PINNED never are; SUPPRESSED never match."""

    ACTIVE = "active"
    PINNED = "pinned"
    SUPPRESSED = "suppressed"


@dataclass(frozen=True, slots=True)
class KeywordTerm:
    """A term as the lexicon holds it. ``text`` and ``aliases`` are normalised.

    ``decayed_at`` is when decay last brought ``weight`` up to date (``None``: at ``last_seen_at``);
    snapshots carry it so a restart does not decay the same interval twice.
    """

    text: str
    aliases: tuple[str, ...] = ()
    weight: float = 1.0
    confidence: float = 1.0
    source: str = "manual"
    first_seen_at: float = 0.0
    last_seen_at: float = 0.0
    expires_at: float | None = None
    status: TermStatus = TermStatus.ACTIVE
    decayed_at: float | None = None


class KeywordHit(NamedTuple):
    """One occurrence of a term (through its text or an alias) in a normalised message.

    ``start``/``end`` are character offsets into ``normalize_text(message)``; ``surface`` is the
    normalised string that occurred (the term's text or one of its aliases).

    A NamedTuple rather than a frozen dataclass: it is made once per hit on the per-message path,
    and a frozen dataclass costs twice as much to build (one ``object.__setattr__`` per field).
    """

    key: LexiconKey
    term: str
    surface: str
    start: int
    end: int
    weight: float
    confidence: float


@dataclass(frozen=True, slots=True)
class KeywordSnapshot:
    """Every term of one key, suppressed ones included; what persistence stores and restores."""

    key: LexiconKey
    terms: tuple[KeywordTerm, ...]


@dataclass(frozen=True, slots=True)
class LexiconChanges:
    """What changed since the last ``take_changes()``: terms to save and terms to delete.

    For incremental persistence: saving ``changed`` (upsert by key and text) and deleting
    ``removed`` brings a stored copy from the previous take up to date.
    """

    changed: tuple[tuple[LexiconKey, KeywordTerm], ...]
    removed: tuple[tuple[LexiconKey, str], ...]


@dataclass(frozen=True, slots=True)
class LearnReport:
    """What one learning batch did."""

    texts: int
    skipped_texts: int
    chars_read: int
    created: tuple[KeywordTerm, ...]
    reinforced: int
    evicted: int


@dataclass(frozen=True, slots=True)
class LexiconStatistics:
    keys: int
    terms: int
    pinned: int
    suppressed: int
    learned: int
    automata: int
    rebuilds: int
    matches: int
    evicted: int
    decayed_away: int
    expired: int
    terms_by_scope: tuple[tuple[str, int], ...]


class LexiconError(KernelError):
    """Base class of the lexicon's faults."""


class InvalidTerm(LexiconError):
    """Raised for a term or alias under 2 or over 64 characters or with a lone surrogate, or a
    weight or confidence outside [0, 1]."""


class LexiconFull(LexiconError):
    """Raised when a key is at its cap and nothing in it may be evicted."""


# -- validation (add and restore) ---------------------------------------------------------------


def valid_surface(text: str) -> str:
    normalized = normalize_term(text)
    if not 2 <= len(normalized) <= MAX_TERM_CHARS:
        raise InvalidTerm(
            f"{text[:80]!r}: a term or alias needs 2 to {MAX_TERM_CHARS} characters after normalisation"
        )
    if _SURROGATE.search(normalized) is not None:
        # Half a character: it would match half of an emoji in the text.
        raise InvalidTerm(f"{text!r}: a term or alias cannot hold a lone surrogate")
    return normalized


def valid_or_none(text: str) -> str | None:
    try:
        return valid_surface(text)
    except InvalidTerm:
        return None


def valid_unit(value: float) -> float:
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise InvalidTerm(f"weight and confidence must be in [0, 1], got {value!r}")
    return float(value)


def renormalized(term: KeywordTerm, text: str, aliases: tuple[str, ...]) -> KeywordTerm:
    if text == term.text and aliases == term.aliases:
        return term
    return KeywordTerm(
        text=text,
        aliases=tuple(alias for alias in aliases if alias != text),
        weight=term.weight,
        confidence=term.confidence,
        source=term.source,
        first_seen_at=term.first_seen_at,
        last_seen_at=term.last_seen_at,
        expires_at=term.expires_at,
        status=term.status,
        decayed_at=term.decayed_at,
    )
