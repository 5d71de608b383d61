"""Lexicon matching against a brute-force substring reference, over random Chinese + ASCII + emoji.

The alphabet is small so terms overlap, nest and share prefixes; it carries full-width and upper-case
letters, the ideographic space, zero-width and NUL characters, astral emoji and a lone surrogate, so
normalisation of both sides and the code-unit mapping are exercised together.
"""

from __future__ import annotations

import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from runtime.kernel.lexicon import (
    GLOBAL_KEY,
    DynamicLexicon,
    InvalidTerm,
    LexiconKey,
    TermStatus,
    WhitespaceSegmenter,
    normalize_text,
    score_hits,
)
from tests.kernel.lexicon_reference import GROUP, KEYS, observed, reference

# U+6100 and U+6161 are spelled with the same bytes as "a" and NUL in UTF-16: a matcher that ignored
# character boundaries would find "\u6100a" inside "a\x00\u6100".
ALPHABET = (
    "灰风原神启动小狼" + "abAB" + "ＡｂＢ" + " \u3000" + "😀🐺𠀋" + "\u200b\x00\ud83d" + "İ\u6100\u6161"
)
piece = st.text(alphabet=ALPHABET, min_size=1, max_size=4)
term_spec = st.tuples(
    st.sampled_from(KEYS),
    piece,
    st.lists(piece, max_size=2),
    st.sampled_from([TermStatus.ACTIVE, TermStatus.ACTIVE, TermStatus.PINNED, TermStatus.SUPPRESSED]),
    st.floats(min_value=0.0, max_value=1.0),
)


Spec = tuple[LexiconKey, str, list[str], TermStatus, float]


def build(specs: list[Spec]) -> DynamicLexicon:
    lexicon = DynamicLexicon(segmenter=WhitespaceSegmenter())
    for key, text, aliases, status, weight in specs:
        try:
            lexicon.add(key, text, now=0.0, aliases=aliases, status=status, weight=weight)
        except InvalidTerm:
            continue
    return lexicon


@st.composite
def message_with_terms(draw: st.DrawFn) -> tuple[list[Spec], str]:
    specs = draw(st.lists(term_spec, max_size=12))
    surfaces = [text for _, text, aliases, _, _ in specs for text in (text, *aliases)]
    fragments = st.one_of(piece, st.sampled_from(surfaces)) if surfaces else piece
    # Surfaces go in as written, so case and width differ from their normalised form.
    message = "".join(draw(st.lists(fragments, max_size=10)))
    return specs, message


@settings(max_examples=400, deadline=None)
@given(message_with_terms(), st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True))
@example(([(GROUP, "\u6100a", [], TermStatus.ACTIVE, 1.0)], "a\x00\u6100a"), [GROUP])
@example(([(GROUP, "\u6161a", ["\x00\u6161"], TermStatus.ACTIVE, 1.0)], "aa\u6161a"), [GROUP])
@example(([(GLOBAL_KEY, "İ\ud83d", [], TermStatus.ACTIVE, 1.0)], "İ🐺"), [GLOBAL_KEY])
def test_match_equals_a_brute_force_substring_reference(
    case: tuple[list[Spec], str], keys: list[LexiconKey]
) -> None:
    specs, message = case
    lexicon = build(specs)
    hits = lexicon.match(message, keys)
    assert observed(hits) == reference(lexicon, message, tuple(keys))
    normalized = normalize_text(message)
    assert all(normalized[hit.start : hit.end] == hit.surface for hit in hits)


@settings(max_examples=200, deadline=None)
@given(message_with_terms(), st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True))
def test_score_is_the_score_of_the_hits_and_stays_in_zero_to_one(
    case: tuple[list[Spec], str], keys: list[LexiconKey]
) -> None:
    specs, message = case
    lexicon = build(specs)
    score = lexicon.score(message, keys)
    assert 0.0 <= score <= 1.0
    assert abs(score - score_hits(lexicon.match(message, keys))) < 1e-12


@settings(max_examples=200, deadline=None)
@given(message_with_terms())
def test_matching_stays_right_after_terms_change(
    case: tuple[list[Spec], str],
) -> None:
    specs, message = case
    lexicon = build(specs)
    lexicon.match(message, KEYS)  # builds the automata, which the changes below make stale
    for key, text, _, _, _ in specs[::2]:
        lexicon.remove(key, text)
    for key, text, _, _, _ in specs[1::3]:
        try:
            lexicon.suppress(key, text, now=1.0)
        except InvalidTerm:
            continue
    assert observed(lexicon.match(message, KEYS)) == reference(lexicon, message, KEYS)


def reference_normalize(text: str) -> str:
    folded = []
    for char in text:
        if "\uff01" <= char <= "\uff5e" or char == "\u3000":
            char = unicodedata.normalize("NFKC", char)
        elif char in "\u200b\u200c\u200d\u2060\ufeff":
            continue
        folded.append(char)
    return "".join(folded).lower()


@given(st.text())
def test_normalize_text_folds_full_width_ascii_and_drops_zero_width(text: str) -> None:
    assert normalize_text(text) == reference_normalize(text)
