"""Cheap text features for thread tracking: CJK character bigrams and lowercased ASCII words.

This runs on every message, so it is regular expressions and set lookups only (no jieba, which is
far too slow for the hot path). The work is bounded whatever the input: at most ``max_chars``
characters are read and at most ``max_terms`` terms kept. Bigrams that contain a function character
(的, 了, 吗, 我, 你...) and common chat words in either language are dropped, because they join
unrelated conversations rather than separate them.

Most of the cost is the regular expressions' per-match overhead (each run found is a search, a
buffer allocated and a string made) and one new string per bigram, so the extraction makes as few
of both as the result allows: no CJK scan of an ASCII text; a run of two characters is its own
bigram; and the runs are first looked for in a prefix of a few characters per wanted term, which
most messages fill their terms from, the whole text scanned only when the prefix falls short.
"""

from __future__ import annotations

import re

__all__ = ["extract_terms"]

# Letters, digits and the joiners that occur inside technical words (file.txt, c++, x86_64, mp3), two
# characters or more (a single letter or digit is never a term, and matching it would not change
# where the next word starts).
_ASCII_WORD = re.compile(r"[a-z0-9][a-z0-9_+#.\-]*[a-z0-9+#]")

# Longer words (pasted hashes, paths) are cut so profile keys stay small.
_MAX_WORD = 32

# Characters that mark grammar or people rather than topic; a bigram holding one says little.
_CJK_FUNCTION_CHARS = frozenset(
    "的了吗呢吧啊呀哦哈嗯么嘛哇喔噢诶欸是在有和与及或就都也还又很太更最才再而且把被给让对从向到"
    "我你他她它您们咱俺自己这那哪些个之其该每各此着过地得不没别要会能可想说看去来做上下里中"
)


def _content_run_pattern() -> re.Pattern[str]:
    """Runs of two or more CJK characters that are not function characters, in one pass."""
    ranges = [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF)]
    holes = sorted(ord(char) for char in _CJK_FUNCTION_CHARS)
    parts: list[str] = []
    for low, high in ranges:
        start = low
        for hole in holes:
            if low <= hole <= high:
                if start < hole:
                    parts.append(f"{chr(start)}-{chr(hole - 1)}")
                start = hole + 1
        if start <= high:
            parts.append(f"{chr(start)}-{chr(high)}")
    return re.compile("[" + "".join(parts) + "]{2,}")


# Equal to blanking the function characters and then taking CJK runs, without the copy.
_CJK_CONTENT_RUN = _content_run_pattern()

# The prefix first scanned for runs, in characters per wanted term: a message's content characters
# give about one term each, so most messages fill ``max_terms`` from it (and a long paste is not
# scanned to its end). A run cut off at the prefix's end yields a prefix of its bigrams, which come
# first in the text all the same: the terms found so are the terms of the whole text.
_PREFIX_PER_TERM = 3


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_CJK_STOP_BIGRAMS = _wordset(
    """
    什么 怎么 为何 为啥 如何 因为 所以 但是 可是 然后 如果 虽然 已经 现在 刚才 今天 明天 昨天 时候
    知道 觉得 感觉 真的 确实 应该 可能 一下 一样 一起 一点 一直 东西 事情 问题 感谢 谢谢 大家 好像
    哈哈 呵呵 嘿嘿 嘻嘻 图片 表情 语音 回复 消息 一个 两个 几个 以后 之前 之后 还是 其实 反正 比较
    非常 特别 直接 其他 别人 有人 没人 所有 怎样 为什 不过 只是 就是 还有 或者 而且 然而 于是 总之
    家好 位好 请问
    """
)

_ASCII_STOP = _wordset(
    """
    a about above after again against all also am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down during
    each few for from further had hadn has hasn have haven having he her here hers herself him himself
    his how i if in into is isn it its itself just let me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was
    wasn we were weren what when where which while who whom why will with won would wouldn you your
    yours yourself yourselves ll re ve im ive id youre dont cant wont thats its whats theres
    get got getting go going gone make made use used using try tried know think want need like see say
    said tell thing things way yes yeah yep no nope ok okay oh ah hi hey hello bye lol haha hehe heh hmm
    thanks thank thx ty pls please sorry sure well really right still even much many anyone someone
    something anything everything nothing one two also maybe now then here there there's http https www
    com org net html just good bad new old work works working doesnt isnt didnt wasnt
    everyone everybody guys people folks sup ya yall morning evening afternoon night greetings hallo
    hiya howdy
    """
)


def extract_terms(text: str, max_chars: int = 1_000, max_terms: int = 48) -> tuple[str, ...]:
    """The distinct content terms of ``text`` in order of first appearance, bounded in number:
    its ASCII words, then its CJK bigrams, the first ``max_terms`` of them."""
    if not text:
        return ()
    head = text[:max_chars].lower()
    seen: dict[str, None] = {}
    words = _ASCII_WORD.findall(head)
    if words:
        stop = _ASCII_STOP
        for word in words:
            if word in stop or word.isdigit():
                continue
            seen[word[:_MAX_WORD] if len(word) > _MAX_WORD else word] = None
            if len(seen) >= max_terms:
                return tuple(seen)
    if head.isascii():  # no CJK character (a constant-time check)
        return tuple(seen)
    prefix = _PREFIX_PER_TERM * max_terms
    if len(head) > prefix:
        found = dict(seen)
        if _add_bigrams(found, _CJK_CONTENT_RUN.findall(head, 0, prefix), max_terms):
            return tuple(found)
    _add_bigrams(seen, _CJK_CONTENT_RUN.findall(head), max_terms)
    return tuple(seen)


def _add_bigrams(seen: dict[str, None], runs: list[str], max_terms: int) -> bool:
    """Add the content bigrams of ``runs`` to ``seen`` in order, up to ``max_terms`` terms in all;
    whether it got there. Function characters are breaks, so the runs hold content characters only;
    bigrams are cut one at a time because most messages reach ``max_terms`` long before their end."""
    stop = _CJK_STOP_BIGRAMS
    for run in runs:
        if len(run) == 2:  # the commonest run: its own bigram, no new string
            if run not in stop:
                seen[run] = None
                if len(seen) >= max_terms:
                    return True
            continue
        for i in range(len(run) - 1):
            bigram = run[i : i + 2]
            if bigram not in stop:
                seen[bigram] = None
                if len(seen) >= max_terms:
                    return True
    return False
