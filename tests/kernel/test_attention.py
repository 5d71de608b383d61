"""Attention (design/0002 §13 "attention: forced/high/medium/low、关键词加分")."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.config import parse_config
from runtime.kernel.attention import Attention, AttentionInput, AttentionWeights, Decision, score_attention
from runtime.kernel.errors import InvalidSetting

W = AttentionWeights()


def test_forced_is_forced_whatever_the_score() -> None:
    att = score_attention(AttentionInput(forced=True, recently_replied=True, budget_exhausted=True), W)
    assert att.decision is Decision.FORCED
    assert att.reasons[0] == "forced (addressed to the bot)"


def test_direct_question_in_the_bots_thread_is_high() -> None:
    att = score_attention(AttentionInput(direct=True, question=True, thread_continuity=1.0), W)
    assert att.decision is Decision.HIGH
    assert att.score == pytest.approx(0.85)
    assert "direct +0.45" in att.reasons
    assert "question +0.15" in att.reasons
    assert "thread +0.25" in att.reasons


def test_direct_alone_is_medium() -> None:
    assert score_attention(AttentionInput(direct=True), W).decision is Decision.MEDIUM


def test_chatter_is_low() -> None:
    att = score_attention(AttentionInput(silence_seconds=5.0), W)
    assert att.decision is Decision.LOW
    assert att.reasons[-1].startswith("score 0.00 < medium")


def test_keyword_adds_with_the_term_named() -> None:
    base = score_attention(AttentionInput(question=True), W)
    with_kw = score_attention(AttentionInput(question=True, keyword_score=0.7, keywords=("猫粮",)), W)
    assert with_kw.score == pytest.approx(base.score + 0.21)
    assert "keyword 猫粮 +0.21" in with_kw.reasons
    assert base.decision is Decision.LOW
    assert with_kw.decision is Decision.MEDIUM


def test_keywords_alone_stay_quiet_but_a_keyword_question_speaks() -> None:
    alone = score_attention(AttentionInput(keyword_score=1.0, keywords=("猫粮",), silence_seconds=60.0), W)
    assert alone.decision is Decision.LOW
    asked = score_attention(AttentionInput(keyword_score=1.0, keywords=("猫粮",), question=True), W)
    assert asked.decision is Decision.MEDIUM


@settings(max_examples=200, deadline=None)
@given(kw=st.floats(allow_nan=True, allow_infinity=True), silence=st.floats(min_value=0, max_value=1e9))
def test_keywords_never_force_nor_reach_high_alone(kw: float, silence: float) -> None:
    att = score_attention(AttentionInput(keyword_score=kw, keywords=("灰风",), silence_seconds=silence), W)
    assert att.decision in (Decision.LOW, Decision.MEDIUM)
    assert att.score <= W.keyword + W.silence + 1e-9


def test_silence_before_a_message_earns_a_share_up_to_its_weight() -> None:
    half = score_attention(AttentionInput(silence_seconds=300.0), W)
    full = score_attention(AttentionInput(silence_seconds=10_000.0), W)
    assert half.score == pytest.approx(0.025)
    assert full.score == pytest.approx(0.05)
    assert "silence +0.05" in full.reasons


def test_penalties_pull_a_high_message_down() -> None:
    inp = AttentionInput(direct=True, question=True, thread_continuity=0.4)
    assert score_attention(inp, W).decision is Decision.HIGH
    penalised = score_attention(
        AttentionInput(direct=True, question=True, thread_continuity=0.4, recently_replied=True), W
    )
    assert penalised.decision is Decision.MEDIUM
    assert "recently replied -0.20" in penalised.reasons
    exhausted = score_attention(
        AttentionInput(
            direct=True, question=True, thread_continuity=0.4, recently_replied=True, budget_exhausted=True
        ),
        W,
    )
    assert exhausted.decision is Decision.LOW
    assert "budget exhausted -0.30" in exhausted.reasons


def test_score_stays_within_zero_and_one() -> None:
    top = AttentionInput(
        direct=True, question=True, thread_continuity=5.0, keyword_score=5.0, silence_seconds=1e9
    )
    assert score_attention(top, W).score == 1.0
    bottom = AttentionInput(recently_replied=True, budget_exhausted=True)
    assert score_attention(bottom, W).score == 0.0
    assert not math.isnan(score_attention(AttentionInput(thread_continuity=math.nan), W).score)


def test_thresholds_come_from_config() -> None:
    cfg = parse_config({"attention": {"high": 0.9, "medium": 0.5}}).attention
    weights = AttentionWeights(high=cfg.high, medium=cfg.medium)
    att = score_attention(AttentionInput(direct=True, question=True, thread_continuity=1.0), weights)
    assert att.decision is Decision.MEDIUM
    assert score_attention(AttentionInput(direct=True), weights).decision is Decision.LOW


def test_boundaries_are_inclusive() -> None:
    weights = AttentionWeights(high=0.6, medium=0.45)
    assert score_attention(AttentionInput(direct=True), weights).decision is Decision.MEDIUM
    assert score_attention(AttentionInput(direct=True, question=True), weights).decision is Decision.HIGH


def test_bad_weights_are_refused() -> None:
    with pytest.raises(InvalidSetting, match="attention"):
        AttentionWeights(high=0.3, medium=0.5)


def test_reasons_written_when_read_are_the_words_scoring_gives() -> None:
    """A LOW attention leaves its reasons unwritten until read; read, they are the full words, and
    the Attention equals, hashes and prints like one built with them (/why, the console, the
    replay). Above LOW they are written at once, in the same words."""
    inp = AttentionInput(
        direct=True,
        keyword_score=0.5,
        keywords=("猫粮", "原神", "灰风", "抽卡"),
        thread_continuity=0.4,
        question=True,
        silence_seconds=900.0,
        recently_replied=True,
        budget_exhausted=True,
    )
    shares = (
        "keyword 猫粮,原神,灰风… +0.15",
        "thread +0.10",
        "question +0.15",
        "silence +0.05",
        "recently replied -0.20",
        "budget exhausted -0.30",
    )
    medium = score_attention(inp, W)
    assert medium.decision is Decision.MEDIUM
    assert medium.reasons == ("direct +0.45", *shares, "score 0.40 >= medium 0.35")

    quiet = dataclasses.replace(inp, direct=False)
    low = score_attention(quiet, W)
    assert low.decision is Decision.LOW
    assert low.reasons == (*shares, "score 0.00 < medium 0.35")
    assert low.reasons is low.reasons  # written once
    written = Attention(low.score, low.decision, low.reasons)
    assert score_attention(quiet, W) == written
    assert hash(score_attention(quiet, W)) == hash(written)
    assert repr(score_attention(quiet, W)) == repr(written)
    assert dataclasses.asdict(score_attention(quiet, W))["reasons"] == low.reasons
