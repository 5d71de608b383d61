"""Matching when text or terms hold astral characters (emoji) or the matcher's placeholder unit.

The code-unit automaton scans text whose astral characters are replaced by one placeholder unit
(U+FFFF); surfaces holding an astral character or the placeholder itself live in a second,
plain-str automaton. These tests pin both paths against a brute-force substring reference, with
enough terms per key that the automata (not the few-surfaces str.find path) do the matching.
"""

from __future__ import annotations

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

# Terms no generated message contains, so that every key has more than a few surfaces.
FILLER = ("甲乙丙", "丁戊己", "庚辛壬", "癸子丑", "寅卯辰")
ALPHABET = "灰风小狼" + "aB" + "😀🐺𠀋\U00010400" + "\uffff\ufffe\ud83d\ude00\x00" + "\u200b"
piece = st.text(alphabet=ALPHABET, min_size=1, max_size=4)


def lexicon_with(specs: list[tuple[LexiconKey, str, list[str], TermStatus]]) -> DynamicLexicon:
    lexicon = DynamicLexicon(segmenter=WhitespaceSegmenter())
    for key in KEYS:
        for filler in FILLER:
            lexicon.add(key, filler, now=0.0, weight=0.5)
    for key, text, aliases, status in specs:
        try:
            lexicon.add(key, text, now=0.0, aliases=aliases, status=status, weight=0.7)
        except InvalidTerm:
            continue
    return lexicon


@st.composite
def case(draw: st.DrawFn) -> tuple[list[tuple[LexiconKey, str, list[str], TermStatus]], str]:
    specs = draw(
        st.lists(
            st.tuples(
                st.sampled_from(KEYS),
                piece,
                st.lists(piece, max_size=2),
                st.sampled_from([TermStatus.ACTIVE, TermStatus.PINNED, TermStatus.SUPPRESSED]),
            ),
            max_size=10,
        )
    )
    surfaces = [surface for _, text, aliases, _ in specs for surface in (text, *aliases)]
    fragments = st.one_of(piece, st.sampled_from(surfaces)) if surfaces else piece
    return specs, "".join(draw(st.lists(fragments, max_size=10)))


@settings(max_examples=300, deadline=None)
@given(case(), st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True))
@example(([(GROUP, "灰\uffff", [], TermStatus.ACTIVE)], "灰😀灰\uffff"), [GROUP])
@example(([(GROUP, "狼🐺", ["\uffff狼"], TermStatus.ACTIVE)], "\uffff狼🐺狼"), [GROUP])
def test_matching_with_astral_and_placeholder_characters_equals_the_reference(
    drawn: tuple[list[tuple[LexiconKey, str, list[str], TermStatus]], str], keys: list[LexiconKey]
) -> None:
    specs, message = drawn
    lexicon = lexicon_with(specs)
    hits = lexicon.match(message, keys)
    assert observed(hits) == reference(lexicon, message, tuple(keys))
    normalized = normalize_text(message)
    assert all(normalized[hit.start : hit.end] == hit.surface for hit in hits)
    assert [(hit.start, hit.end) for hit in hits] == sorted((hit.start, hit.end) for hit in hits)
    assert abs(lexicon.score(message, keys) - score_hits(hits)) < 1e-12


def test_an_emoji_term_and_its_alias_match_at_character_offsets() -> None:
    lexicon = lexicon_with([(GROUP, "灰风🐺", ["🐺🐺"], TermStatus.ACTIVE)])
    hits = lexicon.match("😀灰风🐺🐺 灰风", [GROUP])
    assert [(hit.surface, hit.start, hit.end) for hit in hits] == [("灰风🐺", 1, 4), ("🐺🐺", 3, 5)]
    assert lexicon.match("灰风 灰风", [GROUP]) == []


def test_text_around_emoji_still_matches_plain_terms_at_character_offsets() -> None:
    lexicon = lexicon_with([(GLOBAL_KEY, "灰风", [], TermStatus.ACTIVE)])
    hits = lexicon.match("🐺😀灰风\ud83d灰风", [GLOBAL_KEY])
    assert [(hit.start, hit.end) for hit in hits] == [(2, 4), (5, 7)]


def test_learning_reinforces_terms_holding_emoji_or_the_placeholder() -> None:
    lexicon = lexicon_with(
        [(GROUP, "灰风🐺", [], TermStatus.ACTIVE), (GROUP, "小\uffff狼", [], TermStatus.ACTIVE)]
    )
    lexicon.match("", [GROUP])  # built before the batch, as a running bot's would be
    lexicon.learn("今天灰风🐺和小\uffff狼呀", GROUP, now=0.0)  # one segment: found by scanning
    assert lexicon.get(GROUP, "灰风🐺").weight > 0.7  # type: ignore[union-attr]
    assert lexicon.get(GROUP, "小\uffff狼").weight > 0.7  # type: ignore[union-attr]


def test_a_key_of_emoji_terms_alone_counts_as_one_built_automaton() -> None:
    lexicon = DynamicLexicon(segmenter=WhitespaceSegmenter())
    for text in ("🐺🐺", "灰🐺", "风🐺", "狼🐺", "小🐺", "大🐺"):  # more than a few: an automaton
        lexicon.add(GROUP, text, now=0.0)
    assert [hit.term for hit in lexicon.match("大🐺🐺", [GROUP])] == ["大🐺", "🐺🐺"]
    assert lexicon.statistics().automata == 1
