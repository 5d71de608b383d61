"""The compiled segmenter cuts as jieba does, and the index is the same whichever of the two cut it.

jieba (pure Python) is the reference. The accelerator is held to its tokens over chat text (the
replay fixtures, the project's Chinese prose, the IRC chat logs in ``../shared/data`` where they
are), seeded random text (dictionary words with ASCII, emoji and punctuation; code points from every
plane; a message at the index cap) and hypothesis' strings. The index columns and query terms are
compared with the rules of :mod:`runtime.store.text` applied to jieba's own tokens by a plain loop.
Without the accelerator (not installed, broken, or cutting differently) the store falls back to jieba
with one log line and writes the same index: an old database stays searchable either way.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import random
import re
import sqlite3
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import jieba
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from runtime.config.store import StoreConfig
from runtime.store import segmenter
from runtime.store.backends import open_store
from runtime.store.text import INDEX_MAX_CHARS, char_tokens, index_text, parse_query

ROOT = Path(__file__).resolve().parents[2]
IRC = ROOT.parent / "shared" / "data" / "disentangle"
CJK = re.compile(r"[\u3400-\u9fff]")


# -- the reference: jieba's tokens through the index rules, written out plainly ---------------------


def reference_char_tokens(text: str) -> list[str]:
    out: list[str] = []
    lowered = text.lower()
    i = 0
    while i < len(lowered):
        ch = lowered[i]
        if ch.isascii():
            m = re.compile(r"[a-z]+|[0-9]+").match(lowered, i)
            if m:
                out.append(m.group())
                i = m.end()
                continue
        elif ch.isalnum():
            out.append(ch)
        i += 1
    return out


def reference_words(tokens: list[str]) -> list[str]:
    words: list[str] = []
    for token in tokens:
        parts = reference_char_tokens(token)
        if parts and all(not p.isascii() for p in parts):
            words.append("".join(parts))
        else:
            words.extend(parts)
    return words


def reference_index(text: str) -> tuple[str, str]:
    text = text[:INDEX_MAX_CHARS]
    words = reference_words(list(jieba.cut_for_search(text, HMM=False)))
    return " ".join(words), " ".join(reference_char_tokens(text))


def assert_same_cuts(texts: list[str]) -> None:
    for text in texts:
        assert segmenter.cut_for_search(text) == list(jieba.cut_for_search(text, HMM=False)), text
        assert segmenter.cut(text) == list(jieba.cut(text, HMM=False)), text
        indexed = index_text(text)
        assert (indexed.words, indexed.chars) == reference_index(text), text


# -- texts ------------------------------------------------------------------------------------------


def project_chat() -> list[str]:
    lines = [
        json.loads(line)["text"]
        for line in (ROOT / "tests/replay/fixtures/groups.jsonl").read_text("utf-8").splitlines()
    ]
    for doc in ("README.zh-CN.md", "docs/CONFIG.zh-CN.md"):
        lines += [s.strip() for s in (ROOT / doc).read_text("utf-8").splitlines() if CJK.search(s)]
    return lines


def irc_chat(every: int = 7) -> list[str]:
    lines: list[str] = []
    for log in sorted(IRC.glob("*/*.raw.txt")):
        for line in log.read_text("utf-8", errors="replace").splitlines():
            m = re.match(r"\[\d\d:\d\d\] <[^>]*> (.*)", line)
            if m:
                lines.append(m.group(1))
    return lines[::every]


def dictionary_words() -> list[str]:
    path = Path(jieba.__file__).parent / "dict.txt"
    return [line.split(" ")[0] for line in path.read_text("utf-8").splitlines()]


ASCII_BITS = [
    "python3.11",
    "iPhone15",
    "QQ",
    "ok",
    "666",
    "C++",
    "a_b",
    "3.14",
    "100%",
    "e-mail",
    "#1",
    "R&D",
]
EMOJI = ["😂", "👍", "❤️", "🇨🇳", "👨‍👩‍👧", "[图片]", "[表情]"]
PUNCT = list("，。！？、；：“”‘’（）《》【】…—～·,.!?;:'\"()[]{}<>/\\|@#$%^&*-_=+~` \t\n\r　")


def chat_like(rng: random.Random, words: list[str], n: int) -> list[str]:
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 25)):
            r = rng.random()
            if r < 0.7:
                parts.append(rng.choice(words))
            elif r < 0.8:
                parts.append(rng.choice(PUNCT))
            elif r < 0.88:
                parts.append(rng.choice(ASCII_BITS))
            elif r < 0.94:
                parts.append(rng.choice(EMOJI))
            else:
                parts.append("".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(rng.randint(1, 4))))
        out.append("".join(parts))
    return out


PLANES = [
    (0x09, 0x0D),
    (0x20, 0x7E),
    (0x80, 0x2FFF),
    (0x3000, 0x303F),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7FF),
    (0xE000, 0xFFFD),
    (0x1F300, 0x1FAFF),
    (0x20000, 0x2A6DF),
    (0x10000, 0x10FFFF),
]


def random_code_points(rng: random.Random, n: int) -> list[str]:
    return [
        "".join(chr(rng.randint(*rng.choice(PLANES))) for _ in range(rng.choice([1, 2, 5, 20, 200])))
        for _ in range(n)
    ]


# -- the accelerator agrees with jieba ------------------------------------------------------------------


def test_the_compiled_segmenter_is_in_use() -> None:
    # A dependency of the project: `make` installs it, so the store runs off the GIL by default.
    assert segmenter.name() == "rjieba"


def test_same_tokens_over_project_chat_and_prose() -> None:
    texts = project_chat()
    assert len(texts) > 500
    assert_same_cuts(texts)


@pytest.mark.skipif(not IRC.is_dir(), reason="the IRC chat logs are in ../shared/data")
def test_same_tokens_over_irc_chat_logs() -> None:
    texts = irc_chat()
    assert len(texts) > 1000
    assert_same_cuts(texts)


def test_same_tokens_over_seeded_random_chat() -> None:
    rng = random.Random(20261201)
    assert_same_cuts(chat_like(rng, dictionary_words(), 3000))


def test_same_tokens_over_random_code_points() -> None:
    rng = random.Random(7)
    assert_same_cuts(random_code_points(rng, 3000))


def test_same_tokens_for_a_message_at_and_past_the_index_cap() -> None:
    rng = random.Random(11)
    words = dictionary_words()
    novel = "".join(chat_like(rng, words, 900))
    assert len(novel) > INDEX_MAX_CHARS
    assert_same_cuts([novel[:INDEX_MAX_CHARS], novel[: INDEX_MAX_CHARS + 1]])
    assert index_text(novel) == index_text(novel[:INDEX_MAX_CHARS])


chat_alphabet = st.one_of(
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.sampled_from(PUNCT),
    st.characters(blacklist_categories=("Cs",)),
)
chat_pieces = st.one_of(
    st.text(chat_alphabet, max_size=30), st.sampled_from([*EMOJI, *ASCII_BITS, "研究生命起源"])
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(chat_pieces, max_size=12))
def test_same_tokens_for_any_text(pieces: list[str]) -> None:
    assert_same_cuts(["".join(pieces)])


def test_char_tokens_are_the_plain_rule_for_every_code_point() -> None:
    every = "".join(chr(c) for c in range(0x110000))
    for start in range(0, len(every), 4096):
        chunk = every[start : start + 4096]
        assert char_tokens(chunk) == reference_char_tokens(chunk), hex(start)


def test_a_lone_surrogate_is_cut_by_jieba() -> None:
    # No UTF-8 form, so the accelerator cannot take it; the message is indexed all the same.
    for text in ("ab\udc80cd灰风", "\ud800", "研究\udfff生命"):
        assert_same_cuts([text])


# -- without the accelerator ------------------------------------------------------------------------


def fake_accelerator(cut_for_search: object) -> types.ModuleType:
    module = types.ModuleType("rjieba")
    module.cut_for_search = cut_for_search  # type: ignore[attr-defined]
    module.cut = lambda text, hmm=True: list(jieba.cut(text, HMM=hmm))  # type: ignore[attr-defined]
    return module


def choose(import_module: Any) -> tuple[segmenter._Segmenter, list[dict[str, Any]]]:
    chosen = segmenter._Segmenter()
    with capture_logs() as logs:
        chosen.load(import_module=import_module)
    return chosen, logs


def test_an_accelerator_that_cuts_differently_is_not_used() -> None:
    def almost(text: str, hmm: bool = True) -> list[str]:
        return [t for t in jieba.cut_for_search(text, HMM=hmm) if t != "华大"]

    chosen, logs = choose(lambda name: fake_accelerator(almost))
    assert chosen.name == "jieba"
    assert chosen.cut_for_search("我来到北京清华大学") == list(
        jieba.cut_for_search("我来到北京清华大学", HMM=False)
    )
    [line] = logs
    assert (line["event"], line["log_level"], line["segmenter"]) == ("store.segmenter", "warning", "jieba")
    assert "differently" in line["reason"]


def test_an_accelerator_that_fails_to_load_is_not_used() -> None:
    def broken(name: str) -> types.ModuleType:
        raise OSError("rjieba.abi3.so: cannot open shared object file")

    chosen, logs = choose(broken)
    assert chosen.name == "jieba"
    [line] = logs
    assert (line["log_level"], line["segmenter"]) == ("warning", "jieba")
    assert line["reason"].startswith("rjieba unavailable: OSError")


def test_the_accelerator_that_agrees_is_chosen_with_one_line() -> None:
    chosen, logs = choose(importlib.import_module)
    assert chosen.name == "rjieba"
    assert [(line["event"], line["log_level"], line["segmenter"]) for line in logs] == [
        ("store.segmenter", "info", "rjieba")
    ]


class PanicException(BaseException):
    """What a panic inside compiled code raises through pyo3 (not an ``Exception``)."""


def test_a_panic_in_the_accelerator_is_cut_by_jieba_and_logged() -> None:
    def panics_on_long(text: str, hmm: bool = True) -> list[str]:
        if len(text) > 100:
            raise PanicException("index out of bounds")
        return list(jieba.cut_for_search(text, HMM=hmm))

    chosen, _ = choose(lambda name: fake_accelerator(panics_on_long))
    assert chosen.name == "rjieba"
    text = "周末一起去爬山吗" * 20
    with capture_logs() as logs:
        assert chosen.cut_for_search(text) == list(jieba.cut_for_search(text, HMM=False))
    assert [line["event"] for line in logs] == ["store.segmenter_panic"]


# A process without rjieba (as on a machine where it failed to install): it writes a real SQLite
# store, logs which segmenter it has, and prints the index it made.
WITHOUT_ACCELERATOR = """
import asyncio, json, sys
from pathlib import Path
sys.modules["rjieba"] = None  # import rjieba -> ImportError
from runtime.logs import configure_logging
configure_logging(json=True, stream=sys.stderr)
from runtime.config.store import StoreConfig
from runtime.store.backends import open_store
from runtime.store.records import StoredMessage
from runtime.store import segmenter

async def main(data, texts):
    store = await open_store(StoreConfig(backend="sqlite"), data)
    await store.append_messages(
        [StoredMessage("group:1", str(i), "u1", "Alice", float(i), t) for i, t in enumerate(texts)]
    )
    await store.close()

data, texts = json.load(sys.stdin)
asyncio.run(main(Path(data), texts))
print(segmenter.name())
"""


def test_without_the_accelerator_the_store_writes_the_same_index(tmp_path: Path) -> None:
    rng = random.Random(5)
    texts = project_chat()[:300] + chat_like(rng, dictionary_words(), 300) + ["ab\udc80cd"]
    texts = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]  # what a store keeps
    data = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_ACCELERATOR],
        input=json.dumps([str(data), texts]),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["jieba"]
    said = [json.loads(line) for line in done.stderr.splitlines() if '"store.segmenter"' in line]
    assert [(line["level"], line["segmenter"]) for line in said] == [("warning", "jieba")]
    assert said[0]["reason"].startswith("rjieba unavailable: ModuleNotFoundError")

    [db] = data.rglob("*.sqlite3")
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT text, words, chars FROM messages ORDER BY seq").fetchall()
    assert len(rows) == len(texts)
    for text, words, chars in rows:
        indexed = index_text(text)  # this process: the accelerator
        assert (words, chars) == (indexed.words, indexed.chars), text

    async def search_with_the_accelerator() -> None:
        store = await open_store(StoreConfig(backend="sqlite"), data)
        try:
            for i in range(0, 300, 29):
                terms = [w for w in parse_query(texts[i]).words if len(w) > 1][:2]
                if not terms:
                    continue
                hits = await store.search_messages(" ".join(terms), chat_ids=["group:1"], limit=500)
                assert str(i) in {h.message.message_id for h in hits}, (texts[i], terms)
        finally:
            await store.close()

    asyncio.run(search_with_the_accelerator())


def test_stored_messages_keep_the_same_tokens() -> None:
    # The index of a message known before the accelerator came in: a database written then stays valid.
    assert index_text("用Python写爬虫").words == "用 python 写 爬虫"
    assert index_text("我来到北京清华大学").words == "我 来到 北京 清华 华大 大学 清华大学"
    assert index_text("老张刚换了iPhone15").chars == "老 张 刚 换 了 iphone 15"
