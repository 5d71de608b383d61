"""DynamicLexicon (design/0002 §7, §13 lexicon row): scopes, aliases, status, decay, expiry, caps, score."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from runtime.kernel.errors import InvalidSetting
from runtime.kernel.lexicon import (
    GLOBAL_KEY,
    DynamicLexicon,
    InvalidTerm,
    KeywordSnapshot,
    KeywordTerm,
    LexiconFull,
    LexiconKey,
    LexiconScope,
    LexiconSettings,
    TermStatus,
    normalize_term,
    normalize_text,
    score_hits,
)

DAY = 86_400.0
GROUP_A = LexiconKey(LexiconScope.GROUP, "group:1001")
GROUP_B = LexiconKey(LexiconScope.GROUP, "group:1002")
GAME = LexiconKey(LexiconScope.GAME, "werewolf")


class SplitSegmenter:
    """Splits on spaces and '|': tests decide the words exactly."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def cut(self, text: str) -> Iterable[str]:
        self.seen.append(text)
        return text.replace("|", " ").split()


def make(**settings: object) -> DynamicLexicon:
    return DynamicLexicon(LexiconSettings(**settings), segmenter=SplitSegmenter())  # type: ignore[arg-type]


def terms_of(lexicon: DynamicLexicon, text: str, keys: Iterable[LexiconKey]) -> list[str]:
    return [hit.term for hit in lexicon.match(text, keys)]


# -- scope ------------------------------------------------------------------------------------------


def test_a_group_term_matches_only_in_its_own_group() -> None:
    lexicon = make()
    lexicon.add(GROUP_A, "原神", now=0.0)
    assert terms_of(lexicon, "今晚原神上线吗", [GLOBAL_KEY, GROUP_A]) == ["原神"]
    assert terms_of(lexicon, "今晚原神上线吗", [GLOBAL_KEY, GROUP_B]) == []


def test_global_terms_match_wherever_the_global_key_is_asked() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "灰风", now=0.0)
    assert terms_of(lexicon, "灰风在吗", [GROUP_A, GLOBAL_KEY]) == ["灰风"]
    assert terms_of(lexicon, "灰风在吗", [GROUP_A]) == []


def test_the_same_word_in_two_keys_gives_a_hit_per_key_and_the_score_takes_the_best() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "原神", now=0.0, weight=0.3)
    lexicon.add(GROUP_A, "原神", now=0.0, weight=0.8)
    hits = lexicon.match("原神", [GLOBAL_KEY, GROUP_A])
    assert {(hit.key, hit.weight) for hit in hits} == {(GLOBAL_KEY, 0.3), (GROUP_A, 0.8)}
    assert lexicon.score("原神", [GLOBAL_KEY, GROUP_A]) == pytest.approx(0.8)


def test_a_change_in_one_group_rebuilds_only_that_groups_automaton() -> None:
    lexicon = make()
    lexicon.add(GROUP_A, "原神", now=0.0)
    lexicon.add(GROUP_B, "星铁", now=0.0)
    lexicon.match("原神 星铁", [GROUP_A, GROUP_B])
    before = lexicon.statistics().rebuilds
    lexicon.add(GROUP_B, "崩坏", now=1.0)
    lexicon.match("原神 星铁 崩坏", [GROUP_A, GROUP_B])
    assert lexicon.statistics().rebuilds == before + 1
    assert terms_of(lexicon, "崩坏", [GROUP_B]) == ["崩坏"]


def test_clear_drops_a_whole_key() -> None:
    lexicon = make()
    lexicon.add(GAME, "狼人", now=0.0)
    lexicon.add(GAME, "预言家", now=0.0)
    assert lexicon.clear(GAME) == 2
    assert terms_of(lexicon, "狼人 预言家", [GAME]) == []
    assert GAME not in lexicon.list_keys()


def test_a_registration_disposer_removes_the_term_once() -> None:
    lexicon = make()
    dispose = lexicon.register(GAME, "狼人杀", now=0.0, aliases=["werewolf"])
    assert terms_of(lexicon, "来玩Werewolf", [GAME]) == ["狼人杀"]
    assert dispose() is True
    assert dispose() is False
    assert terms_of(lexicon, "来玩werewolf 狼人杀", [GAME]) == []


# -- aliases and normalisation ----------------------------------------------------------------------


def test_an_alias_hit_resolves_to_its_term_and_reports_what_occurred() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "灰风", now=0.0, aliases=["GreyWind", "小灰"])
    hits = lexicon.match("小灰, greywind 在吗", [GLOBAL_KEY])
    assert [(hit.term, hit.surface, hit.start, hit.end) for hit in hits] == [
        ("灰风", "小灰", 0, 2),
        ("灰风", "greywind", 4, 12),
    ]


def test_full_width_upper_case_and_padding_meet_their_half_width_lower_case_forms() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "  ＱＱ音乐 ", now=0.0)
    lexicon.add(GLOBAL_KEY, "Grey Wind", now=0.0)
    assert lexicon.get(GLOBAL_KEY, "qq音乐") is not None
    assert terms_of(lexicon, "打开qq音乐", [GLOBAL_KEY]) == ["qq音乐"]
    assert terms_of(lexicon, "ＧＲＥＹ\u3000ＷＩＮＤ", [GLOBAL_KEY]) == ["grey wind"]


def test_zero_width_characters_inside_a_word_do_not_hide_it() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "灰风", now=0.0)
    assert terms_of(lexicon, "灰\u200b风", [GLOBAL_KEY]) == ["灰风"]
    assert normalize_text("灰\u200b风\ufeff") == "灰风"


def test_hit_offsets_index_the_normalised_text_across_emoji() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "灰风", now=0.0)
    lexicon.add(GLOBAL_KEY, "🐺灰", now=0.0)
    text = "😀😀🐺灰风！"
    normalized = normalize_text(text)
    for hit in lexicon.match(text, [GLOBAL_KEY]):
        assert normalized[hit.start : hit.end] == hit.surface


def test_claiming_another_terms_alias_moves_it_and_claiming_its_text_absorbs_it() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "灰风", now=0.0, aliases=["小灰"])
    lexicon.add(GLOBAL_KEY, "小灰灰", now=0.0, aliases=["小灰"])
    assert lexicon.get(GLOBAL_KEY, "灰风") is not None
    assert lexicon.get(GLOBAL_KEY, "灰风").aliases == ()  # type: ignore[union-attr]
    assert terms_of(lexicon, "小灰", [GLOBAL_KEY]) == ["小灰灰"]
    lexicon.add(GLOBAL_KEY, "灰风狼", now=0.0, aliases=["灰风"])
    assert [term.text for term in lexicon.terms(GLOBAL_KEY)] == ["小灰灰", "灰风狼"]


def test_adding_the_same_text_again_updates_it_and_keeps_first_seen() -> None:
    lexicon = make()
    lexicon.add(GROUP_A, "原神", now=10.0, weight=0.4)
    term = lexicon.add(GROUP_A, "原神", now=20.0, weight=0.9, aliases=["yuanshen", "原神"])
    assert (term.first_seen_at, term.last_seen_at, term.weight) == (10.0, 20.0, 0.9)
    assert term.aliases == ("yuanshen",)
    assert len(lexicon.terms(GROUP_A)) == 1


@pytest.mark.parametrize("text", ["猫", " 猫 ", "", "   ", "\u200b猫", "Ａ", "灰\ud83d", "灰风" * 33])
def test_terms_too_short_too_long_or_with_half_an_emoji_are_refused(text: str) -> None:
    lexicon = make()
    with pytest.raises(InvalidTerm):
        lexicon.add(GROUP_A, text, now=0.0)
    with pytest.raises(InvalidTerm):
        lexicon.add(GROUP_A, "灰风", now=0.0, aliases=[text])
    assert lexicon.terms(GROUP_A) == []


@pytest.mark.parametrize("weight", [-0.1, 1.5, float("nan")])
def test_weights_outside_zero_to_one_are_refused(weight: float) -> None:
    with pytest.raises(InvalidTerm):
        make().add(GROUP_A, "灰风", now=0.0, weight=weight)


def test_normalize_term_trims_and_folds() -> None:
    assert normalize_term("\u3000ＡＢＣ灰风  ") == "abc灰风"


# -- status -----------------------------------------------------------------------------------------


def test_a_suppressed_term_never_matches_until_unsuppressed() -> None:
    lexicon = make()
    lexicon.add(GROUP_A, "原神", now=0.0, aliases=["ys"])
    lexicon.suppress(GROUP_A, "原神", now=1.0)
    assert lexicon.match("原神 ys", [GROUP_A]) == []
    assert lexicon.score("原神 ys", [GROUP_A]) == 0.0
    term = lexicon.suppress(GROUP_A, "原神", False, now=2.0)
    assert term is not None
    assert term.status is TermStatus.ACTIVE
    assert terms_of(lexicon, "原神 ys", [GROUP_A]) == ["原神", "原神"]


def test_suppressing_an_unknown_word_keeps_learning_from_proposing_it() -> None:
    lexicon = make()
    lexicon.suppress(GROUP_A, "复读机", now=0.0)
    lexicon.learn("复读机 复读机 来了", GROUP_A, now=1.0)
    assert lexicon.get(GROUP_A, "复读机").status is TermStatus.SUPPRESSED  # type: ignore[union-attr]
    assert terms_of(lexicon, "复读机", [GROUP_A]) == []
    assert lexicon.get(GROUP_A, "来了") is not None


def test_unpin_does_not_unsuppress_and_unknown_terms_return_none() -> None:
    lexicon = make()
    lexicon.suppress(GROUP_A, "复读机", now=0.0)
    assert lexicon.pin(GROUP_A, "复读机", False).status is TermStatus.SUPPRESSED  # type: ignore[union-attr]
    assert lexicon.pin(GROUP_A, "不存在的", True) is None
    assert lexicon.suppress(GROUP_A, "不存在的", False, now=0.0) is None


def test_remove_reports_whether_the_term_existed() -> None:
    lexicon = make()
    lexicon.add(GROUP_A, "原神", now=0.0)
    assert lexicon.remove(GROUP_A, "原神") is True
    assert lexicon.remove(GROUP_A, "原神") is False
    assert lexicon.remove(GROUP_B, "原神") is False
    assert terms_of(lexicon, "原神", [GROUP_A]) == []


# -- decay --------------------------------------------------------------------------------------------


def test_one_half_life_unseen_halves_the_weight() -> None:
    lexicon = make(half_life=DAY)
    lexicon.add(GROUP_A, "原神", now=0.0, weight=0.8)
    assert lexicon.decay(DAY) == 0
    assert lexicon.get(GROUP_A, "原神").weight == pytest.approx(0.4)  # type: ignore[union-attr]


def test_decay_in_steps_equals_decay_at_once_and_never_counts_an_interval_twice() -> None:
    stepwise, at_once = make(half_life=DAY), make(half_life=DAY)
    for lexicon in (stepwise, at_once):
        lexicon.add(GROUP_A, "原神", now=0.0, weight=0.8)
    for when in (DAY / 2, DAY, DAY, 1.5 * DAY):
        stepwise.decay(when)
    at_once.decay(1.5 * DAY)
    assert stepwise.get(GROUP_A, "原神").weight == pytest.approx(  # type: ignore[union-attr]
        at_once.get(GROUP_A, "原神").weight  # type: ignore[union-attr]
    )
    assert at_once.get(GROUP_A, "原神").weight == pytest.approx(0.8 * 0.5**1.5)  # type: ignore[union-attr]


def test_terms_that_fall_under_the_threshold_are_deleted_but_pinned_and_suppressed_stay() -> None:
    lexicon = make(half_life=DAY, delete_below=0.05)
    lexicon.add(GROUP_A, "原神", now=0.0, weight=0.2)
    lexicon.add(GROUP_A, "灰风", now=0.0, weight=0.2, status=TermStatus.PINNED)
    lexicon.suppress(GROUP_A, "复读机", now=0.0)
    assert lexicon.decay(2.5 * DAY) == 1  # 0.2 * 0.5**2.5 ≈ 0.035
    assert lexicon.get(GROUP_A, "原神") is None
    assert lexicon.get(GROUP_A, "灰风").weight == 0.2  # type: ignore[union-attr]
    assert lexicon.get(GROUP_A, "复读机") is not None
    assert lexicon.statistics().decayed_away == 1


def test_a_term_seen_again_is_not_decayed_for_the_time_before_it_was_seen() -> None:
    lexicon = make(half_life=DAY)
    lexicon.learn("原神", GROUP_A, now=0.0)  # 0.2
    lexicon.learn("原神", GROUP_A, now=DAY)  # 0.2 * 0.5 + 0.1 = 0.2
    lexicon.decay(DAY)
    assert lexicon.get(GROUP_A, "原神").weight == pytest.approx(0.2)  # type: ignore[union-attr]
    lexicon.decay(2 * DAY)
    assert lexicon.get(GROUP_A, "原神").weight == pytest.approx(0.1)  # type: ignore[union-attr]


def test_decay_and_expiry_can_be_limited_to_some_keys() -> None:
    lexicon = make(half_life=DAY)
    for key in (GROUP_A, GROUP_B):
        lexicon.add(key, "原神", now=0.0, weight=0.8, expires_at=DAY)
    lexicon.decay(DAY, keys=[GROUP_A])
    assert weight_of(lexicon, GROUP_A) == pytest.approx(0.4)
    assert weight_of(lexicon, GROUP_B) == pytest.approx(0.8)
    assert lexicon.expire(DAY, keys=[GROUP_B, LexiconKey(LexiconScope.THREAD, "th-9")]) == 1
    assert lexicon.get(GROUP_A, "原神") is not None


def weight_of(lexicon: DynamicLexicon, key: LexiconKey) -> float:
    term = lexicon.get(key, "原神")
    assert term is not None
    return term.weight


# -- expiry -------------------------------------------------------------------------------------------


def test_expired_terms_are_deleted_whatever_their_status() -> None:
    lexicon = make()
    lexicon.add(GAME, "狼人", now=0.0, expires_at=100.0, status=TermStatus.PINNED)
    lexicon.add(GAME, "预言家", now=0.0, expires_at=200.0)
    lexicon.add(GAME, "女巫", now=0.0)
    assert terms_of(lexicon, "狼人", [GAME]) == ["狼人"]  # matching has no clock: until expire() runs
    assert lexicon.expire(99.0) == 0
    assert lexicon.expire(100.0) == 1
    assert terms_of(lexicon, "狼人 预言家 女巫", [GAME]) == ["预言家", "女巫"]
    assert lexicon.expire(1e9) == 1
    assert [term.text for term in lexicon.terms(GAME)] == ["女巫"]
    assert lexicon.statistics().expired == 2


# -- caps ---------------------------------------------------------------------------------------------


def test_an_add_beyond_the_cap_evicts_the_lowest_active_weight_never_a_pinned_term() -> None:
    lexicon = make(max_terms=3)
    lexicon.add(GROUP_A, "甲乙", now=0.0, weight=0.1, status=TermStatus.PINNED)
    lexicon.add(GROUP_A, "丙丁", now=0.0, weight=0.5)
    lexicon.add(GROUP_A, "戊己", now=0.0, weight=0.3)
    lexicon.add(GROUP_A, "庚辛", now=0.0, weight=0.9)
    assert sorted(term.text for term in lexicon.terms(GROUP_A)) == ["丙丁", "庚辛", "甲乙"]
    assert lexicon.statistics().evicted == 1


def test_equal_weights_evict_the_least_recently_seen() -> None:
    lexicon = make(max_terms=2)
    lexicon.add(GROUP_A, "甲乙", now=5.0, weight=0.5)
    lexicon.add(GROUP_A, "丙丁", now=1.0, weight=0.5)
    lexicon.add(GROUP_A, "戊己", now=9.0, weight=0.5)
    assert sorted(term.text for term in lexicon.terms(GROUP_A)) == ["戊己", "甲乙"]


def test_a_key_full_of_pinned_terms_refuses_an_add() -> None:
    lexicon = make(max_terms=2)
    lexicon.add(GROUP_A, "甲乙", now=0.0, status=TermStatus.PINNED)
    lexicon.suppress(GROUP_A, "丙丁", now=0.0)
    with pytest.raises(LexiconFull):
        lexicon.add(GROUP_A, "戊己", now=0.0)
    lexicon.add(GROUP_A, "甲乙", now=1.0, status=TermStatus.PINNED)  # an update needs no room


def test_the_global_key_has_its_own_cap() -> None:
    lexicon = make(max_terms=1, max_terms_global=3)
    for word in ("甲乙", "丙丁", "戊己"):
        lexicon.add(GLOBAL_KEY, word, now=0.0)
        lexicon.add(GROUP_A, word, now=0.0)
    assert len(lexicon.terms(GLOBAL_KEY)) == 3
    assert len(lexicon.terms(GROUP_A)) == 1


# -- score ----------------------------------------------------------------------------------------------


def test_no_hit_scores_zero_and_one_term_scores_its_weight_times_confidence() -> None:
    lexicon = make()
    lexicon.add(GROUP_A, "原神", now=0.0, weight=0.5, confidence=0.8)
    assert lexicon.score("今天吃什么", [GROUP_A]) == 0.0
    assert lexicon.score("", [GROUP_A]) == 0.0
    assert lexicon.score("原神", [GROUP_A]) == pytest.approx(0.4)


def test_a_nested_term_counts_once_as_the_longest_match() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "灰风", now=0.0, weight=0.9)
    lexicon.add(GLOBAL_KEY, "灰风酱", now=0.0, weight=0.3)
    assert len(lexicon.match("灰风酱", [GLOBAL_KEY])) == 2
    assert lexicon.score("灰风酱", [GLOBAL_KEY]) == pytest.approx(0.3)
    assert lexicon.score("灰风酱 灰风", [GLOBAL_KEY]) == pytest.approx(1 - 0.7 * 0.1)


def test_overlapping_terms_count_the_leftmost() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "原神", now=0.0, weight=0.2)
    lexicon.add(GLOBAL_KEY, "神启", now=0.0, weight=0.9)
    assert lexicon.score("原神启动", [GLOBAL_KEY]) == pytest.approx(0.2)


def test_a_repeated_term_counts_once_and_distinct_terms_combine_by_noisy_or() -> None:
    lexicon = make()
    lexicon.add(GROUP_A, "原神", now=0.0, weight=0.5)
    lexicon.add(GROUP_A, "星铁", now=0.0, weight=0.5)
    assert lexicon.score("原神原神原神", [GROUP_A]) == pytest.approx(0.5)
    assert lexicon.score("原神和星铁", [GROUP_A]) == pytest.approx(0.75)
    hits = lexicon.match("原神和星铁", [GROUP_A])
    assert lexicon.score("原神和星铁", [GROUP_A]) == pytest.approx(score_hits(hits))


def test_score_stays_at_most_one_with_many_strong_terms() -> None:
    lexicon = make()
    words = [f"词{chr(0x4E00 + i)}" for i in range(50)]
    for word in words:
        lexicon.add(GROUP_A, word, now=0.0, weight=1.0)
    assert lexicon.score("".join(words), [GROUP_A]) == 1.0


# -- snapshot and statistics --------------------------------------------------------------------------


def test_snapshot_and_restore_bring_back_every_term_and_its_state() -> None:
    lexicon = make(half_life=DAY)
    lexicon.add(GLOBAL_KEY, "灰风", now=0.0, aliases=["greywind"], status=TermStatus.PINNED)
    lexicon.add(GROUP_A, "原神", now=0.0, weight=0.8, expires_at=5 * DAY)
    lexicon.suppress(GROUP_A, "复读机", now=0.0)
    lexicon.decay(DAY)
    snapshots = lexicon.snapshot()
    assert all(isinstance(snapshot, KeywordSnapshot) for snapshot in snapshots)

    restored = make(half_life=DAY)
    restored.restore(snapshots)
    assert restored.snapshot() == snapshots
    assert terms_of(restored, "Greywind 原神 复读机", [GLOBAL_KEY, GROUP_A]) == ["灰风", "原神"]
    # The day already decayed is not decayed again after the restart.
    restored.decay(DAY)
    assert restored.get(GROUP_A, "原神").weight == pytest.approx(0.4)  # type: ignore[union-attr]


def test_restore_replaces_only_the_keys_it_carries_and_applies_the_cap() -> None:
    source = make()
    for word in ("甲乙", "丙丁", "戊己"):
        source.add(GROUP_A, word, now=0.0, weight=0.5)
    target = make(max_terms=2)
    target.add(GROUP_A, "旧词", now=0.0)
    target.add(GROUP_B, "别组", now=0.0)
    target.restore(source.snapshot())
    assert len(target.terms(GROUP_A)) == 2
    assert target.get(GROUP_A, "旧词") is None
    assert target.get(GROUP_B, "别组") is not None


def test_restore_skips_rows_that_are_no_longer_valid_terms_instead_of_failing() -> None:
    good = KeywordTerm("原神", aliases=("ys", "猫"), weight=0.5)
    snapshot = KeywordSnapshot(
        GROUP_A, (good, KeywordTerm("猫"), KeywordTerm("星铁", weight=7.0), KeywordTerm("ＱＱ音乐"))
    )
    lexicon = make()
    assert lexicon.restore([snapshot]) == 2
    assert sorted(term.text for term in lexicon.terms(GROUP_A)) == ["qq音乐", "原神"]
    assert lexicon.get(GROUP_A, "原神").aliases == ("ys",)  # type: ignore[union-attr]
    removed = {text for _, text in lexicon.take_changes().removed}
    assert removed == {"猫", "星铁", "ＱＱ音乐"}


def test_statistics_count_keys_terms_and_statuses() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "灰风", now=0.0, status=TermStatus.PINNED)
    lexicon.add(GROUP_A, "原神", now=0.0)
    lexicon.suppress(GROUP_A, "复读机", now=0.0)
    lexicon.match("灰风 原神", [GLOBAL_KEY, GROUP_A])
    stats = lexicon.statistics()
    assert (stats.keys, stats.terms, stats.pinned, stats.suppressed) == (2, 3, 1, 1)
    assert stats.automata == 2
    assert dict(stats.terms_by_scope)["group"] == 2


def test_settings_out_of_range_are_refused_naming_the_key() -> None:
    with pytest.raises(InvalidSetting, match=r"lexicon\.half_life_ms"):
        LexiconSettings(half_life=0.0)
    with pytest.raises(InvalidSetting, match=r"lexicon\.max_terms_per_scope"):
        LexiconSettings(max_terms=0)


def test_settings_come_from_the_config_section_in_seconds() -> None:
    from runtime.config.lexicon import LexiconConfig

    settings = LexiconSettings.from_config(LexiconConfig(half_life_ms=3_600_000, stop_words=("灰风",)))
    assert settings.half_life == 3600.0
    assert "灰风" in settings.stop_words
    assert LexiconSettings.from_config(LexiconConfig()).max_terms == LexiconConfig().max_terms_per_scope
