"""Normalisation shared by terms and the text they are matched against.

Both sides go through :func:`normalize_text`, so a term and its occurrence meet in one form:

- full-width ASCII (U+FF01–U+FF5E) becomes half-width, the ideographic space U+3000 a plain space
  (the ASCII part of NFKC, nothing more: compatibility ideographs and circled digits stay as they are);
- zero-width characters (ZWSP, ZWNJ, ZWJ, word joiner, BOM) are dropped, so "灰\u200b风" still says 灰风;
- everything is lower-cased.

Terms are also trimmed (:func:`normalize_term`); text is not, because trimming cannot change which
substrings occur. Hit positions refer to the normalised text.

The matcher does not search the normalised text itself but its UTF-16 code units spelled as a
Latin-1 string (:func:`encode_units`): pyahocorasick finds a node's child by a linear scan, and a
Chinese lexicon puts thousands of distinct first characters under the root; in code units the root
has at most 256 children and no node more, which makes a scan over 10,000 terms about six times
faster. Matches must then end on a unit boundary (an even byte), and astral characters are
replaced by a placeholder unit so that unit offsets are character offsets (:func:`encode_flat`).
"""

from __future__ import annotations

import re

_FOLD_TABLE: dict[int, int | None] = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_FOLD_TABLE[0x3000] = 0x20
for _zero_width in (0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF):
    _FOLD_TABLE[_zero_width] = None

# Chinese chat is full of full-width punctuation (，。！？), so most messages need folding somewhere.
# str.translate() with a dict looks up every character in Python (~200 ns each); replacing only the
# runs that need it keeps a 60-character message near 1 µs.
_NEEDS_FOLD = re.compile("[\uff01-\uff5e\u3000\u200b-\u200d\u2060\ufeff]+")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _fold_run(run: re.Match[str]) -> str:
    return run.group().translate(_FOLD_TABLE)


def normalize_text(text: str) -> str:
    """Fold ``text`` for matching: full-width ASCII → half-width, zero-width dropped, lower case."""
    return _NEEDS_FOLD.sub(_fold_run, text).lower()


class MatchFolder:
    """:func:`normalize_text` as far as matching can tell, for the per-message path.

    Folding is length-preserving except for the zero-width characters, so a full-width character
    whose half-width lower-case form occurs in no term can stay as it is: neither form can be part
    of a match, and offsets do not move. Chinese chat is full of ，！？： that no term contains;
    skipping them saves most of the folding. The folder learns which ASCII characters terms use
    (:meth:`note`); the set only grows, and a superset is always safe.
    """

    __slots__ = ("_ascii", "_pattern")

    def __init__(self) -> None:
        self._ascii: frozenset[str] = frozenset()
        self._pattern = _fold_pattern(self._ascii)

    def note(self, surface: str) -> None:
        """Make sure the full-width forms of ``surface``'s ASCII characters are folded."""
        chars = {char for char in surface if char < "\x80"}
        if not chars <= self._ascii:
            self._ascii = self._ascii | chars
            self._pattern = _fold_pattern(self._ascii)

    def fold(self, text: str) -> str:
        pattern = self._pattern
        if pattern.search(text) is None:  # most messages: a search costs half a substitution
            return text.lower()
        return pattern.sub(_fold_run, text).lower()


def _fold_pattern(ascii_chars: frozenset[str]) -> re.Pattern[str]:
    members = ["\u200b-\u200d\u2060\ufeff"]  # dropped always: dropping moves offsets
    for char in sorted(ascii_chars):
        if char == " ":
            members.append("\u3000")
        elif "!" <= char <= "~":
            members.append(chr(ord(char) + 0xFEE0))
            if char.islower():
                members.append(chr(ord(char.upper()) + 0xFEE0))
    return re.compile("[" + "".join(members) + "]+")


def normalize_term(text: str) -> str:
    """Fold a term or alias like text, then trim surrounding whitespace."""
    return normalize_text(text).strip()


def encode_units(normalized: str) -> str:
    """The UTF-16 code units of ``normalized`` as a string of two Latin-1 characters per unit."""
    # surrogatepass: a lone surrogate (a broken client's half emoji) is one unit, not an error.
    return normalized.encode("utf-16-be", "surrogatepass").decode("latin-1")


# The unit an astral character becomes in the text the code-unit automaton scans: a noncharacter,
# never in real text. Surfaces holding it (or an astral character) go to the plain-str automaton
# instead, so the placeholder never takes part in a code-unit match. (Not a surrogate: encoding one
# goes through the "surrogatepass" error handler, which took the encoding from 0.3 to 1 µs.)
ASTRAL_PLACEHOLDER = "\uffff"
_NOT_FLAT = re.compile("[\uffff\U00010000-\U0010ffff]")


def encode_flat(normalized: str) -> tuple[str, bool]:
    """``normalized`` as code units spelled in Latin-1, one unit per character, and whether the
    plain-str automaton must scan it too (it holds an astral character or the placeholder).

    An astral character takes two UTF-16 units; replacing it by :data:`ASTRAL_PLACEHOLDER` keeps
    unit offsets equal to character offsets, so a hit needs no offset mapping. Most chat carries an
    emoji (80% of the benchmark's messages): the former unit-to-character map (a regex pass plus a
    bisect per hit) cost about 2 µs a message, the substitution costs about 0.6.
    """
    flat = _ASTRAL.sub(ASTRAL_PLACEHOLDER, normalized)  # the very same object when nothing changed
    try:
        # "strict" takes the codec's fast path: naming an error handler costs 0.2 µs a message.
        encoded = flat.encode("utf-16-be").decode("latin-1")
    except UnicodeEncodeError:  # a lone surrogate (a broken client's half emoji) is one unit
        encoded = flat.encode("utf-16-be", "surrogatepass").decode("latin-1")
    return encoded, flat is not normalized or ASTRAL_PLACEHOLDER in normalized


def is_flat(surface: str) -> bool:
    """Whether the code-unit automaton can hold ``surface``: each character one UTF-16 unit and
    none of them the placeholder."""
    return _NOT_FLAT.search(surface) is None
