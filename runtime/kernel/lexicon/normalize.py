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
faster. Matches must then start and end on a character boundary (:func:`unit_to_char` maps back).
"""

from __future__ import annotations

import re
from bisect import bisect_left

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


def unit_length(surface: str) -> int:
    """How many UTF-16 code units ``surface`` takes (astral characters take two)."""
    return len(surface.encode("utf-16-be", "surrogatepass")) >> 1


class UnitMap:
    """Maps UTF-16 code-unit offsets of one text back to character offsets.

    Built only when a text has hits; a text without astral characters maps one to one.
    """

    __slots__ = ("_astral_units",)

    def __init__(self, normalized: str, encoded_length: int) -> None:
        # The unit offset of the j-th astral character is its char offset plus j (each earlier
        # astral character took one extra unit). Two bytes a character: no astral character at all.
        self._astral_units: list[int] = []
        if encoded_length != 2 * len(normalized):
            self._astral_units = [match.start() + j for j, match in enumerate(_ASTRAL.finditer(normalized))]

    @property
    def identity(self) -> bool:
        """Whether every character is one code unit (then offsets map one to one)."""
        return not self._astral_units

    def char_offset(self, unit: int) -> int:
        """The character offset of the character starting at code unit ``unit``."""
        if not self._astral_units:
            return unit
        return unit - bisect_left(self._astral_units, unit)
