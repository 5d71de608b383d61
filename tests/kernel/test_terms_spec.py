"""``extract_terms`` equals its rule stated plainly, on arbitrary text.

The extraction is written for speed (a prefix scanned first, two-character runs taken whole, no CJK
scan of ASCII text); the rule it must keep is short: lowercase the first ``max_chars`` characters;
the ASCII words of two characters or more that are neither stop words nor numbers, cut to 32
characters; then the bigrams of the CJK runs left when every function character is a break, less
the stop bigrams; the first ``max_terms`` distinct ones, in order.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from runtime.kernel._features import _ASCII_STOP, _CJK_FUNCTION_CHARS, _CJK_STOP_BIGRAMS, extract_terms

_WORD = re.compile(r"[a-z0-9][a-z0-9_+#.\-]*[a-z0-9+#]|[a-z0-9]")
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def spec(text: str, max_chars: int, max_terms: int) -> tuple[str, ...]:
    head = text[:max_chars].lower()
    terms = [
        word[:32]
        for word in _WORD.findall(head)
        if len(word) >= 2 and word not in _ASCII_STOP and not word.isdigit()
    ]
    blanked = "".join(" " if char in _CJK_FUNCTION_CHARS else char for char in head)
    for run in _CJK.findall(blanked):
        terms += [run[i : i + 2] for i in range(len(run) - 1) if run[i : i + 2] not in _CJK_STOP_BIGRAMS]
    return tuple(dict.fromkeys(terms))[:max_terms]


# Characters that matter to the rule: content and function ideographs (the edges of the three CJK
# blocks too), stop-bigram characters, ASCII letters, digits and joiners, capitals whose lower case
# is longer or ASCII (İ, the Kelvin sign), emoji, zero-width and other separators.
_ALPHABET = (
    "猫粮原神代码报错数据库服务器火锅游戏天气产品经理测试什么怎么哈哈知道时候谢谢大家"
    + "".join(sorted(_CJK_FUNCTION_CHARS))[:40]
    + "\u3400\u4dbf\u4e00\u9fff\uf900\ufaff\u33ff\ufb00"
    + "abcxyzAZ019_+#.-"
    + "İKÅßΣ"
    + "🐱👍\u200b\x00 ，。？!\n"
)
_PIECES = st.one_of(
    st.text(alphabet=_ALPHABET, max_size=12),
    st.sampled_from(sorted(_CJK_STOP_BIGRAMS)),
    st.sampled_from(sorted(_ASCII_STOP)),
    st.sampled_from(
        ["file.txt", "c++", "x86_64", "2024", "12a", "a" * 40, "9" * 40, "deadbeef" * 5, "v1.2."]
    ),
)
_TEXT = st.one_of(st.lists(_PIECES, max_size=80).map("".join), st.text(max_size=300))


@settings(max_examples=600, deadline=None)
@given(text=_TEXT, max_chars=st.integers(1, 400), max_terms=st.integers(1, 60))
@example(text="猫粮" * 300 + "原神", max_chars=1_000, max_terms=16)  # past the prefix, filled in it
@example(text="的" * 60 + "猫粮原神", max_chars=1_000, max_terms=2)  # the prefix falls short
@example(text="的" * 47 + "猫粮原神", max_chars=1_000, max_terms=16)  # a run across the prefix's end
@example(text="İstanbul K8S 猫粮", max_chars=1_000, max_terms=48)  # lower case longer, or ASCII
def test_extract_terms_equals_the_rule(text: str, max_chars: int, max_terms: int) -> None:
    assert extract_terms(text, max_chars, max_terms) == spec(text, max_chars, max_terms)


@given(text=_TEXT)
def test_extract_terms_with_the_default_bounds_equals_the_rule(text: str) -> None:
    assert extract_terms(text) == spec(text, 1_000, 48)
