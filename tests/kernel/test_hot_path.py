"""The per-message shortcuts keep the contracts: events born in their state, moves that carry a new
time or payload, values built through their slots, the lexicon's cached key plans and its small-key
search."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import re
import sys

import pytest

from runtime.kernel._build import builder
from runtime.kernel.attention import Attention, Decision
from runtime.kernel.errors import IllegalTransition
from runtime.kernel.events import BotEvent, EventState, EventStore
from runtime.kernel.lexicon import (
    GLOBAL_KEY,
    DynamicLexicon,
    LexiconKey,
    LexiconScope,
    WhitespaceSegmenter,
    normalize_text,
)
from runtime.kernel.lexicon.terms import TermStatus

S = EventState


# -- EventStore ----------------------------------------------------------------------------------


def test_an_event_born_skipped_counts_its_move_and_is_pruned_like_a_moved_one() -> None:
    store = EventStore(keep_terminal_for=10.0)
    born = store.create(kind="message", chat_id="group:1", now=5.0, state=S.SKIPPED)
    moved = store.create(kind="message", chat_id="group:1", now=5.0)
    store.transition(moved.id, S.SKIPPED, 5.0)
    assert born.state is S.SKIPPED
    assert born.updated_at == 5.0
    stats = store.statistics()
    assert (stats.created, stats.transitions, stats.terminal, stats.live) == (2, 2, 2, 0)
    assert store.prune(14.0) == 0
    assert store.prune(15.0) == 2


def test_an_event_born_further_along_counts_the_shortest_legal_path() -> None:
    store = EventStore()
    store.create(kind="message", chat_id="group:1", now=0.0, state=S.CLASSIFIED)  # 1 move
    store.create(kind="message", chat_id="group:1", now=0.0, state=S.ELIGIBLE)  # 2 moves
    store.create(kind="message", chat_id="group:1", now=0.0, state="scheduled")  # type: ignore[arg-type]
    assert store.statistics().transitions == 1 + 2 + 2
    assert [e.state for e in store.list()] == [S.CLASSIFIED, S.ELIGIBLE, S.SCHEDULED]


def test_the_count_cap_holds_for_events_born_terminal() -> None:
    store = EventStore(max_terminal=3)
    for i in range(10):
        store.create(kind="message", chat_id="group:1", now=float(i), state=S.SKIPPED)
    assert len(store) == 3
    assert store.statistics().pruned == 7


def test_a_move_can_carry_a_new_time_and_payload_and_a_refused_one_changes_nothing() -> None:
    store = EventStore()
    event = store.create(kind="message", chat_id="group:1", now=0.0, payload={"a": 1}, state=S.CLASSIFIED)
    scheduled = store.transition(event.id, S.SCHEDULED, 1.0, not_before=9.0, payload={"a": 2})
    assert (scheduled.state, scheduled.not_before, dict(scheduled.payload)) == (S.SCHEDULED, 9.0, {"a": 2})
    with pytest.raises(IllegalTransition):
        store.transition(event.id, S.CLASSIFIED, 2.0, not_before=20.0, payload={"a": 3})
    assert store.require(event.id) == scheduled
    with pytest.raises(TypeError):  # still frozen
        scheduled.payload["a"] = 4  # type: ignore[index]


# -- builders ------------------------------------------------------------------------------------


def test_a_built_value_equals_the_constructed_one_and_stays_frozen() -> None:
    build_attention = builder(Attention)
    built = build_attention(0.5, Decision.MEDIUM, ("why",))
    assert built == Attention(0.5, Decision.MEDIUM, ("why",))
    assert type(built) is Attention
    assert hash(built) == hash(Attention(0.5, Decision.MEDIUM, ("why",)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.score = 1.0  # type: ignore[misc]
    event = builder(BotEvent)("ev-1", "m", "group:1", None, (), (), 0.0, 0.0, 0.0, None, 0.0, S.CAPTURED, {})
    assert dataclasses.replace(event, priority=1.0).priority == 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class Base:
    a: int


@dataclasses.dataclass(frozen=True, slots=True)
class Derived(Base):  # a base with slots of its own: the builder sets the slots one by one
    b: tuple[int, ...]


def test_a_built_value_is_of_the_frozen_class_whichever_way_the_builder_fills_it() -> None:
    for cls, values in ((Base, (1,)), (Derived, (1, (2,)))):
        built = builder(cls)(*values)
        assert type(built) is cls
        assert built == cls(*values)
        assert copy.deepcopy(built) == built
        assert pickle.loads(pickle.dumps(built)) == built
        with pytest.raises(dataclasses.FrozenInstanceError):
            built.a = 5  # type: ignore[misc]


def test_a_builder_refuses_a_class_whose_post_init_it_would_skip() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        value: int

        def __post_init__(self) -> None:
            if self.value < 0:
                raise ValueError("negative")

    with pytest.raises(TypeError):
        builder(Checked)


# -- lexicon -------------------------------------------------------------------------------------


def _spans(lexicon: DynamicLexicon, text: str, keys: tuple[LexiconKey, ...]) -> list[tuple[object, ...]]:
    return [(h.key, h.term, h.surface, h.start, h.end) for h in lexicon.match(text, keys)]


def test_a_kept_keys_tuple_sees_keys_that_come_and_go() -> None:
    lexicon = DynamicLexicon(segmenter=WhitespaceSegmenter())
    thread = LexiconKey(LexiconScope.THREAD, "th-1")
    keys = (GLOBAL_KEY, thread)
    lexicon.add(GLOBAL_KEY, "猫粮", now=0.0)
    assert _spans(lexicon, "买猫粮和原神", keys) == [(GLOBAL_KEY, "猫粮", "猫粮", 1, 3)]
    lexicon.add(thread, "原神", now=0.0)  # a key the cached plan did not have
    assert [s[1] for s in _spans(lexicon, "买猫粮和原神", keys)] == ["猫粮", "原神"]
    lexicon.clear(thread)
    lexicon.remove(GLOBAL_KEY, "猫粮")
    assert _spans(lexicon, "买猫粮和原神", keys) == []


def test_a_small_key_finds_what_an_automaton_finds_overlaps_and_aliases_included() -> None:
    text = "灰风灰风酱说:Greywind, ＧＲＥＹＷＩＮＤ! aaaa 🐺灰风"
    small = DynamicLexicon(segmenter=WhitespaceSegmenter())
    key = LexiconKey(LexiconScope.PERSONA, "self")
    small.add(key, "灰风", now=0.0, aliases=("greywind", "灰风酱"))
    small.add(key, "aa", now=0.0)
    large = DynamicLexicon(segmenter=WhitespaceSegmenter())
    large.add(key, "灰风", now=0.0, aliases=("greywind", "灰风酱"))
    large.add(key, "aa", now=0.0)
    for filler in ("甲乙", "丙丁", "戊己"):  # more than a few surfaces: scanned by the automaton
        large.add(key, filler, now=0.0)
    hits = _spans(small, text, (key,))
    assert hits == _spans(large, text, (key,))
    normalized = normalize_text(text)
    overlapping = [i for i in range(len(normalized)) if normalized.startswith("aa", i)]
    assert len(overlapping) == 3
    assert [h[3] for h in hits if h[2] == "aa"] == overlapping
    assert [h[2] for h in hits if h[1] == "灰风"] == [
        "灰风",
        "灰风",
        "灰风酱",
        "greywind",
        "greywind",
        "灰风",
    ]
    assert [h[3] for h in hits if h[1] == "灰风"][-1] == normalized.rfind(
        "灰风"
    )  # characters, past the emoji
    small.suppress(key, "aa", now=1.0)
    assert all(h[2] != "aa" for h in _spans(small, text, (key,)))


def test_suppressed_terms_do_not_count_toward_a_small_key() -> None:
    lexicon = DynamicLexicon(segmenter=WhitespaceSegmenter())
    key = LexiconKey(LexiconScope.GAME, "g")
    lexicon.add(key, "猜数", now=0.0, status=TermStatus.SUPPRESSED)
    assert lexicon.match("猜数字", (key,)) == []


# -- question check ------------------------------------------------------------------------------


def test_the_question_words_first_letter_check_is_the_case_folded_one() -> None:
    from runtime.kernel._signals import _QUESTION_WORD_START

    folded = re.compile("[hwda]", re.IGNORECASE)
    differ = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if (folded.match(chr(code)) is None) != (_QUESTION_WORD_START.match(chr(code)) is None)
    ]
    assert differ == []
