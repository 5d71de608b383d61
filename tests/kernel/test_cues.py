"""The opening cue the link scorer reads of a message (runtime/kernel/_cues.py)."""

from __future__ import annotations

import pytest

from runtime.kernel._cues import CUES, message_cue


def cue(text: str) -> str:
    return CUES[message_cue(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("thanks, that fixed it", "thanks"),
        ("bob: thanks!", "thanks"),  # an IRC address before the cue
        ("yes, in the upstream block", "answer"),
        ("ok will try", "answer"),
        ("you need an fstab line with _netdev", "directive"),
        ("try sudo apt update first", "directive"),
        ("anyone know how to set up a printer?", "anyone"),
        ("How do I mount an nfs share", "question"),
        ("is there a way to keep the old kernel", "question"),
        ("hi all", "greeting"),
        ("Hello everyone", "greeting"),
        ("i have the same problem", "self"),
        ("the upstream socket moved", "none"),
        ("nginx keeps returning 502", "none"),
    ],
)
def test_english_openings(text: str, expected: str) -> None:
    assert cue(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("谢谢，好了", "thanks"),
        ("@灰风 感谢大佬", "thanks"),  # the @ segment before the cue
        ("好的我试试", "answer"),
        ("是的，在 upstream 那段里", "answer"),
        ("你把 socket 路径改一下", "directive"),
        ("你好，请问这个怎么弄", "greeting"),  # 你好 is a greeting, not "you ..."
        ("有没有人知道打印机驱动怎么装", "anyone"),
        ("你们有人遇到过这个报错吗", "anyone"),  # the group, not "you ..." to one person
        ("大家有没有遇到过", "anyone"),
        ("你们好", "greeting"),
        ("请问开机自动挂载 nfs 怎么配置？", "question"),
        ("大家好", "greeting"),
        ("我也遇到了", "self"),
        ("升级以后一直返回 502", "none"),
    ],
)
def test_chinese_openings(text: str, expected: str) -> None:
    assert cue(text) == expected


def test_the_earliest_chinese_opening_wins() -> None:
    assert cue("谢谢，请问还有别的办法吗") == "thanks"
    assert cue("请问有人知道吗") == "question"


def test_only_the_opening_is_read() -> None:
    # A cue word late in the message is no opening; a huge or odd message costs the same and
    # never fails.
    assert cue("the upstream block was wrong so thanks") == "none"
    assert cue("升级以后一直返回 502，谢谢") == "none"
    assert cue("x" * 200_000 + " thanks") == "none"
    assert cue("") == "none"
    assert cue("\x00\u200b😀 thanks") == "thanks"
    assert cue("😀" * 50_000) == "none"
