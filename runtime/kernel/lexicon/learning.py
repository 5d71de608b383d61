"""Candidate terms from chat text: segmentation, then filters (design/0002 §7 "动态维护").

A :class:`Segmenter` splits text into words. :class:`JiebaSegmenter` uses jieba, imported on first
use: jieba takes about 0.8 s to load its dictionary and segments about 9,000 short messages a
second, so learning runs in batches off the per-message path and never at kernel import time.

:func:`extract_candidates` reads at most ``max_chars`` of a text (a 200,000-character message costs
what its first 2,000 characters cost) and drops what is not worth a term: fewer than two
characters, longer than ``max_term_chars``, stop words, pure numbers, runs of one repeated character
(哈哈哈, 233333, hhhh), tokens with control characters or lone surrogates, and tokens with no
letter or ideograph in them (punctuation, emoji); a modal particle glued to a longer word is cut off
(电影吧 → 电影).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from runtime.kernel.lexicon.normalize import normalize_text
from runtime.kernel.lexicon.settings import LexiconSettings
from runtime.kernel.lexicon.terms import LexiconKey


class Segmenter(Protocol):
    """Splits text into words; the order of the words does not matter."""

    def cut(self, text: str) -> Iterable[str]: ...


class JiebaSegmenter:
    """jieba's precise mode, loaded lazily on the first :meth:`cut`."""

    __slots__ = ("_cut",)

    def __init__(self) -> None:
        self._cut: object | None = None

    def cut(self, text: str) -> Iterable[str]:
        if self._cut is None:
            import jieba  # deferred: loading the dictionary takes ~0.8 s

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            self._cut = jieba.lcut
        cut = self._cut
        assert callable(cut)
        words: list[str] = cut(text)
        return words


class WhitespaceSegmenter:
    """Splits on whitespace and punctuation only; for tests and languages with spaces."""

    __slots__ = ()

    _SPLIT = re.compile(r"[\s\W]+")

    def cut(self, text: str) -> Iterable[str]:
        return [word for word in self._SPLIT.split(text) if word]


# Two characters and up; single characters never become terms anyway.
_STOP_WORDS_TEXT = """
    我们 你们 他们 她们 它们 咱们 大家 自己 别人 人家 这个 那个 哪个 这些 那些 这里 那里 哪里 这儿 那儿
    这样 那样 怎样 这么 那么 多么 什么 怎么 为什么 怎么样 为啥 干嘛 是不是 有没有 会不会 能不能 要不要
    没有 不是 就是 还是 也是 都是 只是 但是 可是 不过 而且 或者 因为 所以 如果 要是 虽然 然后 然而 于是
    其实 确实 真的 真是 已经 曾经 正在 一直 一起 一下 一点 一些 一个 一样 有点 有些 还有 只有 可以 可能
    应该 需要 知道 觉得 感觉 认为 好像 似乎 比较 非常 特别 十分 很多 太多 不要 不会 不能 不用 不行 没事
    现在 今天 明天 昨天 刚才 刚刚 之前 之后 以前 以后 时候 东西 事情 的话 起来 出来 过来 回来 下来 上去
    而已 罢了 吧唧 哈哈 嘿嘿 呵呵 嘻嘻 哦哦 嗯嗯 啊啊 好的 好吧 行吧 对的 对啊 是的 是啊 我的 你的 他的 她的
    the and you for are but not this that with have was what lol haha hhh ok okay yes yeah
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())

# jieba often glues a modal particle to the word before it (电影吧, 红色的); three characters or more
# lose it, so 电影吧 teaches 电影 while 酒吧 and 目的 stay whole.
_TRAILING_PARTICLES = "吧啊呢吗啦呀哦嘛了的"

_NUMBER = re.compile(r"[\d.,%+\-:/]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")  # control characters, lone surrogates
_HAS_WORD_CHAR = re.compile(r"[^\W\d_]")  # a letter or an ideograph


def is_candidate(word: str, *, max_term_chars: int, stop_words: frozenset[str]) -> bool:
    """Whether a normalised word may become a learned term."""
    if not 2 <= len(word) <= max_term_chars:
        return False
    if word in STOP_WORDS or word in stop_words:
        return False
    if _NUMBER.fullmatch(word) is not None:
        return False
    if len(set(word)) == 1 or _CONTROL.search(word) is not None:
        return False
    return _HAS_WORD_CHAR.search(word) is not None


def extract_candidates(
    text: str,
    segmenter: Segmenter,
    *,
    max_chars: int,
    max_term_chars: int,
    stop_words: frozenset[str] = frozenset(),
) -> list[str]:
    """Distinct normalised candidate terms of ``text[:max_chars]``, in order of first appearance."""
    seen: dict[str, None] = {}
    for raw in segmenter.cut(normalize_text(text[:max_chars])):
        word = raw.strip()
        if len(word) >= 3 and word[-1] in _TRAILING_PARTICLES:
            word = word[:-1]
        if word not in seen and is_candidate(word, max_term_chars=max_term_chars, stop_words=stop_words):
            seen[word] = None
    return list(seen)


@dataclass(frozen=True, slots=True)
class PreparedText:
    """One text, read up to the cap and normalised, with its candidate words."""

    normalized: str
    candidates: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LearningBatch:
    """Texts segmented and filtered, ready for ``DynamicLexicon.apply_learning``."""

    texts: tuple[tuple[LexiconKey, tuple[PreparedText, ...]], ...]
    skipped_texts: int
    chars_read: int


def prepare_batch(
    texts_by_key: Mapping[LexiconKey, Sequence[str]], segmenter: Segmenter, settings: LexiconSettings
) -> LearningBatch:
    """Segment a batch: the slow half of learning, touching no lexicon state.

    At most ``settings.learn_max_texts`` texts are taken (the rest are counted as skipped), each
    read up to ``settings.learn_max_chars``. Safe to run in a worker thread while the lexicon keeps
    matching on the event loop.
    """
    budget = settings.learn_max_texts
    skipped = 0
    chars = 0
    prepared: list[tuple[LexiconKey, tuple[PreparedText, ...]]] = []
    for key, texts in texts_by_key.items():
        taken = texts[: max(0, budget)]
        skipped += len(texts) - len(taken)
        budget -= len(taken)
        items: list[PreparedText] = []
        for text in taken:
            normalized = normalize_text(text[: settings.learn_max_chars])
            chars += len(normalized)
            words = extract_candidates(
                normalized,
                segmenter,
                max_chars=settings.learn_max_chars,
                max_term_chars=settings.max_term_chars,
                stop_words=settings.stop_words,
            )
            items.append(PreparedText(normalized, tuple(words)))
        if items:
            prepared.append((key, tuple(items)))
    return LearningBatch(tuple(prepared), skipped, chars)
