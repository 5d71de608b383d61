"""Lexicon learning (design/0002 §7), batches and their caps, bad input, and real jieba."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import pytest

from runtime.kernel.lexicon import (
    GLOBAL_KEY,
    DynamicLexicon,
    JiebaSegmenter,
    LexiconKey,
    LexiconScope,
    LexiconSettings,
    TermStatus,
    extract_candidates,
)

GROUP_A = LexiconKey(LexiconScope.GROUP, "group:1001")
GROUP_B = LexiconKey(LexiconScope.GROUP, "group:1002")


class SplitSegmenter:
    """Splits on spaces and '|', and remembers what it was asked to cut."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def cut(self, text: str) -> Iterable[str]:
        self.seen.append(text)
        return text.replace("|", " ").split()


def make(segmenter: SplitSegmenter | None = None, **settings: object) -> DynamicLexicon:
    return DynamicLexicon(
        LexiconSettings(**settings),  # type: ignore[arg-type]
        segmenter=segmenter or SplitSegmenter(),
    )


def weight(lexicon: DynamicLexicon, key: LexiconKey, text: str) -> float:
    term = lexicon.get(key, text)
    assert term is not None, text
    return term.weight


# -- dynamic learning -----------------------------------------------------------------------------------


def test_a_new_word_is_learned_at_weight_point_two_and_then_matches() -> None:
    lexicon = make()
    [term] = lexicon.learn("原神", GROUP_A, now=100.0)
    assert (term.text, term.weight, term.source, term.status) == ("原神", 0.2, "learned", TermStatus.ACTIVE)
    assert (term.first_seen_at, term.last_seen_at) == (100.0, 100.0)
    assert [hit.term for hit in lexicon.match("今晚原神", [GROUP_A])] == ["原神"]
    assert lexicon.get(GROUP_B, "原神") is None


def test_each_text_that_repeats_a_word_adds_point_one_up_to_one() -> None:
    lexicon = make()
    lexicon.learn("原神", GROUP_A, now=0.0)
    lexicon.learn("原神 原神 原神", GROUP_A, now=0.0)  # one text counts once
    assert weight(lexicon, GROUP_A, "原神") == pytest.approx(0.3)
    for _ in range(20):
        lexicon.learn("原神", GROUP_A, now=0.0)
    assert weight(lexicon, GROUP_A, "原神") == 1.0
    assert lexicon.get(GROUP_A, "原神").confidence == 1.0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "word",
    [
        "我们",
        "什么",
        "猫",
        "2024",
        "3.14",
        "100%",
        "12:30",
        "哈哈哈哈",
        "hhhh",
        "666",
        "😀😀",
        "！！",
        "...",
        "a",
    ],
)
def test_stop_words_single_characters_numbers_and_noise_are_not_learned(word: str) -> None:
    lexicon = make()
    assert lexicon.learn(word, GROUP_A, now=0.0) == []
    assert lexicon.terms(GROUP_A) == []


def test_configured_stop_words_and_long_segments_are_not_learned() -> None:
    lexicon = make(stop_words=frozenset({"复读机"}), max_term_chars=4)
    lexicon.learn("复读机 一二三四五 原神", GROUP_A, now=0.0)
    assert [term.text for term in lexicon.terms(GROUP_A)] == ["原神"]


def test_a_particle_glued_to_a_word_is_cut_off() -> None:
    segmenter = SplitSegmenter()
    assert extract_candidates("电影吧 酒吧 红色的", segmenter, max_chars=100, max_term_chars=16) == [
        "电影",
        "酒吧",
        "红色",
    ]


def test_a_text_proposes_at_most_the_configured_number_of_new_words() -> None:
    lexicon = make(learn_max_new_per_text=2)
    lexicon.learn("甲乙 丙丁 戊己 庚辛", GROUP_A, now=0.0)
    assert [term.text for term in lexicon.terms(GROUP_A)] == ["甲乙", "丙丁"]


def test_learning_reinforces_known_terms_the_segmenter_does_not_split_out() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "灰风", now=0.0, weight=0.5, aliases=["小灰"])
    lexicon.add(GROUP_A, "灰风酱", now=0.0, weight=0.5)
    touched = lexicon.learn("我喜欢灰风酱啊", GROUP_A, now=0.0)
    assert weight(lexicon, GROUP_A, "灰风酱") == pytest.approx(0.6)
    assert "灰风酱" in [term.text for term in touched]
    lexicon.learn("小灰 在吗", GLOBAL_KEY, now=0.0)
    assert weight(lexicon, GLOBAL_KEY, "灰风") == pytest.approx(0.6)
    assert lexicon.get(GLOBAL_KEY, "小灰").text == "灰风"  # type: ignore[union-attr]


def test_a_pinned_term_seen_again_keeps_its_weight_but_is_marked_seen() -> None:
    lexicon = make()
    lexicon.add(GROUP_A, "灰风", now=0.0, weight=0.5, status=TermStatus.PINNED)
    lexicon.learn("灰风", GROUP_A, now=50.0)
    term = lexicon.get(GROUP_A, "灰风")
    assert term is not None
    assert (term.weight, term.last_seen_at) == (0.5, 50.0)


def test_a_full_key_lets_a_new_word_push_out_a_weaker_one_but_not_a_stronger_one() -> None:
    lexicon = make(max_terms=2, half_life=86_400.0)
    lexicon.add(GROUP_A, "甲乙", now=0.0, weight=0.9)
    lexicon.add(GROUP_A, "丙丁", now=0.0, weight=0.1)
    lexicon.learn("戊己", GROUP_A, now=0.0)
    assert sorted(term.text for term in lexicon.terms(GROUP_A)) == ["戊己", "甲乙"]
    lexicon.add(GROUP_A, "丙丁", now=0.0, weight=0.9)  # evicts 戊己 (0.2)
    assert lexicon.learn("庚辛", GROUP_A, now=0.0) == []  # the newcomer is the weakest
    assert sorted(term.text for term in lexicon.terms(GROUP_A)) == ["丙丁", "甲乙"]


def test_in_one_batch_a_full_key_keeps_the_strongest_terms_as_they_change() -> None:
    lexicon = make(max_terms=3)
    lexicon.add(GROUP_A, "甲乙", now=0.0, weight=0.9)
    lexicon.add(GROUP_A, "丙丁", now=0.0, weight=0.15)
    lexicon.add(GROUP_A, "戊己", now=0.0, weight=0.5)
    # 子丑 pushes out 丙丁; seen again it rises to 0.3, so 寅卯 and 辰巳 (0.2) go, not 子丑.
    report = lexicon.learn_batch({GROUP_A: ["子丑", "寅卯 子丑", "辰巳"]}, now=0.0)
    kept = {term.text: term.weight for term in lexicon.terms(GROUP_A)}
    assert kept == pytest.approx({"甲乙": 0.9, "戊己": 0.5, "子丑": 0.3})
    assert report.evicted == 3
    assert [term.text for term in report.created] == ["子丑"]


# -- batches --------------------------------------------------------------------------------------------


def test_a_batch_learns_per_key_and_reports_what_it_did() -> None:
    lexicon = make()
    lexicon.add(GROUP_A, "原神", now=0.0, weight=0.5)
    report = lexicon.learn_batch({GROUP_A: ["原神 启动", "启动 原神"], GROUP_B: ["星铁"]}, now=10.0)
    assert (report.texts, report.skipped_texts, report.reinforced, report.evicted) == (3, 0, 3, 0)
    assert sorted(term.text for term in report.created) == ["启动", "星铁"]
    assert weight(lexicon, GROUP_A, "启动") == pytest.approx(0.3)
    assert lexicon.get(GROUP_B, "启动") is None


def test_preparing_a_batch_changes_nothing_until_it_is_applied() -> None:
    lexicon = make()
    lexicon.add(GROUP_A, "原神", now=0.0, weight=0.5)
    batch = lexicon.prepare_learning({GROUP_A: ["原神 启动"], GROUP_B: ["星铁"]})
    assert lexicon.get(GROUP_A, "启动") is None
    assert weight(lexicon, GROUP_A, "原神") == 0.5
    assert [[text.candidates for text in texts] for _, texts in batch.texts] == [
        [("原神", "启动")],
        [("星铁",)],
    ]
    report = lexicon.apply_learning(batch, now=0.0)
    assert (report.texts, report.reinforced, len(report.created)) == (2, 1, 2)
    assert weight(lexicon, GROUP_A, "原神") == pytest.approx(0.6)


def test_preparing_in_a_worker_thread_leaves_matching_alone() -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "灰风", now=0.0)
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(lexicon.prepare_learning, {GROUP_A: [f"词{i}语 灰风" for i in range(2_000)]})
        while not pending.done():
            assert [hit.term for hit in lexicon.match("灰风", [GLOBAL_KEY, GROUP_A])] == ["灰风"]
        report = lexicon.apply_learning(pending.result(), now=1.0)
    assert report.texts == 1_000  # learn_max_texts
    assert report.skipped_texts == 1_000


def test_a_batch_reads_at_most_its_text_cap_and_skips_the_rest() -> None:
    lexicon = make(learn_max_texts=3)
    report = lexicon.learn_batch({GROUP_A: ["甲乙", "丙丁"], GROUP_B: ["戊己", "庚辛", "壬癸"]}, now=0.0)
    assert (report.texts, report.skipped_texts) == (3, 2)
    assert lexicon.get(GROUP_B, "庚辛") is None


def test_a_huge_text_is_read_only_up_to_the_character_cap() -> None:
    segmenter = SplitSegmenter()
    lexicon = make(segmenter, learn_max_chars=2_000)
    huge = "原神 " * 66_000 + "星铁"  # about 200,000 characters; the last word lies past the cap
    report = lexicon.learn_batch({GROUP_A: [huge]}, now=0.0)
    assert report.chars_read == 2_000
    assert all(len(text) <= 2_000 for text in segmenter.seen)
    assert lexicon.get(GROUP_A, "星铁") is None
    assert weight(lexicon, GROUP_A, "原神") == 0.2


# -- bad input --------------------------------------------------------------------------------------


BAD_TEXTS = [
    "",
    "   ",
    "\x00\x00\x00",
    "灰\x00风 \u200b\u200d\ufeff",
    "😀" * 1_000,
    "\ud83d\ude00\ud83d",  # broken surrogates from a careless client
    "𠀋𠀋 𪚥𪚥",
    "灰风" * 100_000,
]


@pytest.mark.parametrize("text", BAD_TEXTS, ids=range(len(BAD_TEXTS)))
def test_bad_input_never_raises(text: str) -> None:
    lexicon = make()
    lexicon.add(GLOBAL_KEY, "灰风", now=0.0)
    lexicon.add(GROUP_A, "😀😀", now=0.0)
    hits = lexicon.match(text, [GLOBAL_KEY, GROUP_A])
    assert 0.0 <= lexicon.score(text, [GLOBAL_KEY, GROUP_A]) <= 1.0
    lexicon.learn(text, GROUP_A, now=1.0)
    lexicon.learn_batch({GROUP_B: [text, text]}, now=2.0)
    assert all("\x00" not in term.text for term in lexicon.terms(GROUP_A) + lexicon.terms(GROUP_B))
    assert len(hits) == overlapping(text, "灰风") + overlapping(text, "😀😀")


def overlapping(text: str, word: str) -> int:
    return sum(text.startswith(word, at) for at in range(len(text)))


def test_a_term_at_the_end_of_a_200000_character_message_is_found() -> None:
    lexicon = make()
    lexicon.add(GROUP_A, "原神", now=0.0)
    text = "😀灰\u200b" * 66_666 + "原神"
    [hit] = lexicon.match(text, [GROUP_A])
    assert hit.end == len(text) - 66_666  # the zero-width characters are gone from the normalised text


# -- jieba ------------------------------------------------------------------------------------------


def test_importing_the_lexicon_does_not_load_jieba() -> None:
    code = "import sys, runtime.kernel.lexicon, runtime.kernel; assert 'jieba' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


def test_learning_with_real_jieba_picks_the_topic_words_of_a_chat() -> None:
    lexicon = DynamicLexicon(segmenter=JiebaSegmenter())
    chat = [
        "周末我们一起去看电影吧，电影院在人民广场",
        "人民广场那家电影院的爆米花很好吃😋",
        "我觉得这部电影还行，2024年最好看的",
    ]
    report = lexicon.learn_batch({GROUP_A: chat}, now=0.0)
    learned = {term.text: term.weight for term in lexicon.terms(GROUP_A)}
    assert learned["电影"] == pytest.approx(0.3)  # 电影吧 (the particle cut off) and 电影
    assert learned["电影院"] == pytest.approx(0.3)
    assert "人民广场" in learned
    assert not {"我们", "一起", "觉得", "2024", "的"} & learned.keys()
    assert report.texts == 3
    assert [hit.term for hit in lexicon.match("去人民广场看电影", [GROUP_A])] == ["人民广场", "电影"]
