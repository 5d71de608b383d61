"""Incremental persistence: a copy kept up to date from take_changes() equals the lexicon."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import example, given, settings
from hypothesis import strategies as st

from runtime.kernel.lexicon import (
    GLOBAL_KEY,
    DynamicLexicon,
    KeywordTerm,
    LexiconKey,
    LexiconScope,
    LexiconSettings,
    TermStatus,
)

GROUP = LexiconKey(LexiconScope.GROUP, "group:1")
GAME = LexiconKey(LexiconScope.GAME, "werewolf")
KEYS = (GLOBAL_KEY, GROUP, GAME)
WORDS = ("灰风", "原神", "星铁", "狼人", "预言家", "复读机", "小灰", "灰风酱")


class SplitSegmenter:
    def cut(self, text: str) -> Iterable[str]:
        return text.split()


Copy = dict[tuple[LexiconKey, str], KeywordTerm]


def apply(copy: Copy, lexicon: DynamicLexicon) -> None:
    changes = lexicon.take_changes()
    for key, term in changes.changed:
        copy[key, term.text] = term
    for key, text in changes.removed:
        copy.pop((key, text), None)


def everything(lexicon: DynamicLexicon) -> Copy:
    return {(snapshot.key, term.text): term for snapshot in lexicon.snapshot() for term in snapshot.terms}


def test_changes_name_what_was_saved_and_what_went() -> None:
    lexicon = DynamicLexicon(segmenter=SplitSegmenter())
    lexicon.add(GROUP, "原神", now=0.0)
    lexicon.add(GROUP, "星铁", now=0.0)
    first = lexicon.take_changes()
    assert sorted(term.text for _, term in first.changed) == ["原神", "星铁"]
    assert first.removed == ()
    assert lexicon.take_changes().changed == ()
    lexicon.remove(GROUP, "原神")
    lexicon.pin(GROUP, "星铁")
    second = lexicon.take_changes()
    assert second.removed == ((GROUP, "原神"),)
    assert [(key, term.status) for key, term in second.changed] == [(GROUP, TermStatus.PINNED)]


def test_a_restore_counts_as_saved() -> None:
    source = DynamicLexicon(segmenter=SplitSegmenter())
    source.add(GROUP, "原神", now=0.0)
    restored = DynamicLexicon(segmenter=SplitSegmenter())
    restored.restore(source.snapshot())
    changes = restored.take_changes()
    assert (changes.changed, changes.removed) == ((), ())


operation = st.one_of(
    st.tuples(
        st.just("add"),
        st.sampled_from(KEYS),
        st.sampled_from(WORDS),
        st.lists(st.sampled_from(WORDS), max_size=2),
    ),
    st.tuples(st.just("remove"), st.sampled_from(KEYS), st.sampled_from(WORDS)),
    st.tuples(st.just("suppress"), st.sampled_from(KEYS), st.sampled_from(WORDS)),
    st.tuples(st.just("pin"), st.sampled_from(KEYS), st.sampled_from(WORDS)),
    st.tuples(
        st.just("learn"), st.sampled_from(KEYS), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)
    ),
    st.tuples(st.just("decay"), st.floats(min_value=0.0, max_value=10.0)),
    st.tuples(st.just("expire"), st.floats(min_value=0.0, max_value=10.0)),
    st.tuples(st.just("clear"), st.sampled_from(KEYS)),
    st.tuples(st.just("take")),
    st.tuples(st.just("take")),  # twice: changes between takes are what the test is about
)


@settings(max_examples=300, deadline=None)
@given(st.lists(operation, max_size=30))
@example([("add", GROUP, "原神", []), ("take",), ("decay", 1.0)])
@example([("learn", GROUP, ["原神"]), ("take",), ("pin", GROUP, "原神")])
def test_a_copy_kept_from_changes_equals_the_lexicon_and_caps_and_weights_hold(
    operations: list[tuple[object, ...]],
) -> None:
    lexicon = DynamicLexicon(
        LexiconSettings(half_life=2.0, delete_below=0.15, max_terms=4), segmenter=SplitSegmenter()
    )
    copy: Copy = {}
    clock = 0.0
    for op in operations:
        clock += 1.0
        match op:
            case ("add", LexiconKey() as key, str(word), list(aliases)):
                if len(lexicon.terms(key)) < 4 or lexicon.get(key, word) is not None:
                    lexicon.add(key, word, now=clock, aliases=aliases, expires_at=clock + 3.0)
            case ("remove", LexiconKey() as key, str(word)):
                lexicon.remove(key, word)
            case ("suppress", LexiconKey() as key, str(word)):
                if len(lexicon.terms(key)) < 4 or lexicon.get(key, word) is not None:
                    lexicon.suppress(key, word, now=clock)
            case ("pin", LexiconKey() as key, str(word)):
                lexicon.pin(key, word)
            case ("learn", LexiconKey() as key, list(words)):
                lexicon.learn(" ".join(words), key, now=clock)
            case ("decay", float(later)):
                lexicon.decay(clock + later)
            case ("expire", float(later)):
                lexicon.expire(clock + later)
            case ("clear", LexiconKey() as key):
                lexicon.clear(key)
            case ("take",):
                apply(copy, lexicon)
        for key in KEYS:
            terms = lexicon.terms(key)
            assert len(terms) <= 4 or key == GLOBAL_KEY
            assert all(0.0 <= term.weight <= 1.0 and 0.0 <= term.confidence <= 1.0 for term in terms)
    apply(copy, lexicon)
    assert copy == everything(lexicon)
