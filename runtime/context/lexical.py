"""Words for the Context Runtime's judgements: content terms, chatter, continuation, lexical overlap.

Uses the store's segmentation (``runtime.store.text``: jieba, the same rules the full-text index uses),
so what the resolver and the retrieval engine call a word is what the index can find. jieba is slow to
start (~0.8 s) but packets are built only for activations, never per message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from functools import lru_cache

import jieba

from runtime.store.text import char_tokens, parse_query

__all__ = ["by_rarity", "is_chatter", "lexical_score", "query_terms", "strip_names", "wants_continuation"]

# jieba's dictionary counts (of ~60M): a word counted more often than this is too common to search for
# on its own when a rarer one is at hand — it says little and its index lists are long.
COMMON_WORD = 20_000
# jieba's dictionary total (as shipped), and the log inverse frequency of an everyday word (counted
# ~20,000 times): rarity above this is what makes a word telling.
_DICTIONARY_TOTAL = 60_101_967
_EVERYDAY_IDF = math.log(_DICTIONARY_TOTAL / COMMON_WORD)

# Placeholders the edge renders for non-text segments ([图片], [表情], [语音]...).
_PLACEHOLDER = re.compile(r"\[[^\[\]\s]{1,8}\]")
_LAUGH = re.compile(r"^(?:[哈呵嘿嘻h]+|[6]+|w+|[?？!！.。…~～]+)$")


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Whole inputs that carry no topic of their own.
_CHATTER_WORDS = _wordset(
    """
    哈哈 哈哈哈 嗯 嗯嗯 哦 哦哦 噢 好 好的 好滴 好吧 行 行吧 可以 草 笑死 绝了 牛 牛逼 厉害 早 早安 早上好
    午安 晚安 晚上好 在吗 在不在 在 你好 您好 大家好 谢谢 多谢 感谢 收到 了解 明白 确实 是的 对 对的 真的
    是吗 真的吗 好耶 贴贴 摸摸 呜呜 呜呜呜 啊 呀 嘿 嗨 哇 666 hi hello hey ok okay thx thanks lol xswl
    nb yyds 晚上 早上 中午 睡了 起床 吃了吗 吃饭 吃了 没事 算了 随便 哈喽
    """
)

# Words that ask to go on with what was being done (design/000 §14: the user says "继续").
_CONTINUE = (
    "继续",
    "接着",
    "然后呢",
    "还有呢",
    "刚才",
    "刚刚",
    "上次",
    "之前说",
    "接下来",
    "下一步",
    "go on",
    "continue",
)

# Verbs of asking that say nothing about the topic: left out of overlap scores.
_GENERIC = _wordset(
    "帮 帮忙 看看 一下 说说 聊聊 问问 告诉 知道 觉得 想 想要 需要 能 能不能 可以 怎么样 咋 啥 吧 呗 个 下 再"
)


def strip_names(text: str, names: Iterable[str]) -> str:
    """``text`` without the bot's names and the edge's placeholders (an address is not a topic)."""
    out = _PLACEHOLDER.sub(" ", text)
    for name in names:
        if name:
            out = re.sub(re.escape(name), " ", out, flags=re.IGNORECASE)
    return out


@lru_cache(maxsize=4096)
def query_terms(text: str) -> tuple[str, ...]:
    """Content words of ``text`` (jieba's precise cut, function words dropped), in order, lower-cased."""
    if not char_tokens(text):
        return ()
    return tuple("".join(phrase) for phrase in parse_query(text).phrases)


def _frequency(word: str) -> int:
    if not jieba.dt.initialized:  # the counts load with the dictionary (once, ~0.8 s)
        jieba.initialize()
    known = jieba.get_FREQ(word)
    if known:
        return int(known)
    # Outside jieba's dictionary: names and longer ASCII words (python, github) are rare and telling;
    # numbers and short ASCII bits (ok, 666, qq) are chat noise, as common as the commonest words.
    if word.isascii() and (word.isdigit() or len(word) <= 3):
        return COMMON_WORD + 1
    return 0


def by_rarity(terms: Iterable[str]) -> tuple[str, ...]:
    """Distinct terms, the rarest first (by jieba's dictionary counts; unknown words count as rarest,
    except numbers and short ASCII bits); very common words are dropped unless nothing else is left."""
    distinct = list(dict.fromkeys(terms))
    ranked = sorted(distinct, key=lambda t: (_frequency(t), -len(t)))
    rare = [t for t in ranked if _frequency(t) <= COMMON_WORD]
    return tuple(rare or ranked)


def wants_continuation(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in _CONTINUE)


def is_chatter(text: str) -> bool:
    """Greetings, laughter, one-word acknowledgements: input that must not open or join a work thread."""
    if wants_continuation(text):
        return False
    terms = query_terms(text)
    if not terms:
        return True
    if all(t in _CHATTER_WORDS or _LAUGH.match(t) for t in terms):
        return True
    content = [t for t in terms if t not in _GENERIC]
    return sum(len(t) for t in content) <= 2


def _weight(term: str) -> float:
    """How much a word says about a topic: its length (up to 4) times how far its rarity (log inverse
    dictionary frequency) rises above that of everyday words. 西湖 or 架构 weigh a lot, 住 or 那 nothing."""
    idf = math.log((jieba.dt.total or _DICTIONARY_TOTAL) / (_frequency(term) + 1))
    return min(len(term), 4) * max(0.0, idf - _EVERYDAY_IDF)


def lexical_score(terms: tuple[str, ...], haystack: str, words: frozenset[str]) -> float:
    """How much of the input's meaning a thread's text covers: 0..1, telling words weigh more.

    A word of two or more characters counts when it occurs anywhere in ``haystack`` (so 架构 matches
    灰风系统架构设计); a one-character word only when it is one of the thread's own ``words``. Words
    are weighed by :func:`_weight`, so sharing 今天 or 我们 means little and sharing 西湖 a lot; when the
    input holds nothing but everyday words, they count by length alone.
    """
    content = [t for t in terms if t not in _GENERIC] or list(terms)
    weights = [_weight(t) for t in content]
    if not any(weights):
        weights = [float(min(len(t), 4)) for t in content]
    total = sum(weights)
    if total == 0:
        return 0.0
    hit = sum(
        w for t, w in zip(content, weights, strict=True) if (t in haystack if len(t) >= 2 else t in words)
    )
    return hit / total
