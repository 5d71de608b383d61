"""What a message's opening words say about its place in a conversation (for the link scorer).

A chat message's first words tell a lot about whether it begins a conversation or answers one: "hi
all" and "anyone know ..." begin one about as often as not, "thanks" and "yes" almost never do (on
the Ubuntu train split, 83% and 49% of messages opening with a greeting or "anyone" begin a
conversation; 2% of those opening with "thanks" or "you"; 9% of the others). The scorer reads one
cue per message, the first of its first three words (or, in Chinese, of the opening phrases found in
its first characters) that belongs to a class.

Pure and cheap: a search of the first characters and a few dictionary lookups per message (about
2.5 µs).
"""

from __future__ import annotations

import re

__all__ = ["CUES", "message_cue"]

# The classes, in code order (code 0: no cue).
CUES = ("none", "thanks", "answer", "directive", "anyone", "question", "greeting", "self")

_WORDS: dict[str, int] = {}
for _code, _words in (
    (1, "thanks thank thx ty tnx thnx thanx cheers"),
    (2, "yes yeah yep yup no nope nah ok okay k right sure exactly indeed correct np"),
    (3, "you your you're youre try use run sudo type check"),
    (4, "anyone anybody someone somebody help guys all"),
    (5, "how what why where which when who does is can do are should could would will did has have"),
    (6, "hi hello hey hiya morning evening yo hallo greetings"),
    (7, "i im i'm my i've ive"),
):
    for _word in _words.split():
        _WORDS[_word] = _code

# Chinese openings, looked for in the first characters (an @ segment may come first): the earliest
# found wins, and at one position the first listed (a longer phrase before one it begins with).
_PHRASES: tuple[tuple[str, int], ...] = (
    ("谢谢", 1),
    ("感谢", 1),
    ("多谢", 1),
    ("大家好", 6),
    ("你们好", 6),
    ("你好", 6),
    ("早上好", 6),
    ("晚上好", 6),
    ("在吗", 6),
    ("有人", 4),
    ("有没有人", 4),
    ("谁知道", 4),
    ("求助", 4),
    ("大佬", 4),
    ("各位", 4),
    ("大家", 4),  # the group as a whole, as "guys" / "all" (after 大家好)
    ("你们", 4),  # likewise, before 你 (a directive to one person)
    ("请问", 5),
    ("怎么", 5),
    ("为什么", 5),
    ("如何", 5),
    ("是不是", 5),
    ("好的", 2),
    ("是的", 2),
    ("没错", 2),
    ("不是", 2),
    ("对的", 2),
    ("可以", 2),
    ("嗯", 2),
    ("你", 3),
    ("试试", 3),
    ("我", 7),
)

_HEAD_CHARS = 40  # the English words are read from the first characters only
_CJK_HEAD = 8  # the Chinese openings are looked for here
_WORD = re.compile(r"[a-z']+")
# One search for every opening: the earliest match wins, and at one position the first listed.
_PHRASE = re.compile("|".join(re.escape(phrase) for phrase, _ in _PHRASES))
_PHRASE_CODE = dict(_PHRASES)


def message_cue(text: str) -> int:
    """The cue code (an index into CUES) of a message's opening."""
    head = text[:_HEAD_CHARS]
    if not head.isascii():
        found = _PHRASE.search(head, 0, _CJK_HEAD)
        if found is not None:
            return _PHRASE_CODE[found.group()]
    for word in _WORD.findall(head.lower())[:3]:
        code = _WORDS.get(word)
        if code is not None:
            return code
    return 0
