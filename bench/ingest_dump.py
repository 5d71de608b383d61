"""Equivalence dump: every decision the kernel makes on a seeded mixed transcript, one line each.

A performance rewrite of the hot path must not change a single decision. This replays a few
thousand seeded messages (Chinese, English, mixed, emoji, zero-width and NUL characters, @s, URLs,
replies, private chats, the bot's own messages, empty and huge texts, Unicode whose lower case
changes length or turns ASCII) through ``Kernel.ingest`` under the default settings and under the
summed-signal scorer with tight bounds (so vocabularies are trimmed and threads evicted), and
writes out every result in full (``repr``: event, thread assignment, attention, keyword hits,
reason, activation), every activation that comes due, each text's terms, the link scorer's
features, a restored tracker's choices and the final statistics. Two trees decide alike when
their dumps are byte-identical:

    .venv/bin/python bench/ingest_dump.py --out /tmp/new.txt
    .venv/bin/python bench/ingest_dump.py --root /tmp/old-tree --out /tmp/old.txt
    cmp /tmp/old.txt /tmp/new.txt

``--root`` imports ``runtime`` from another checkout (an older commit unpacked with ``git archive``).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
from pathlib import Path
from typing import Any

BOT = "10001"
T0 = 1_767_225_600.0

_CJK_WORDS = (
    "今天", "吃饭", "游戏", "代码", "报错", "周末", "电影", "天气", "火锅", "考试", "上班", "部署",
    "数据库", "奶茶", "加班", "上线", "日志", "爬山", "原神", "猫粮", "什么", "怎么", "哈哈", "知道",
    "的", "了", "吗", "我", "你", "是", "在", "不", "没", "说", "看", "这个", "那个", "一下", "真的",
    "服务器", "显卡", "键盘", "宝可梦", "火车票", "咖啡", "周报", "需求", "产品经理", "测试用例",
    "\u3400\u3401", "\u4dbf\u4e00", "\uf900\uf901", "\u9fff\u9ffe", "㐀㐁㐂", "龥龦",
)  # fmt: skip
_ASCII_WORDS = (
    "python", "asyncio", "the", "and", "file.txt", "c++", "x86_64", "mp3", "node.js", "C#", "GPU",
    "Docker", "k8s", "rust", "is", "a", "2024", "42", "v1.2.3", "foo-bar", "-dash-", "trailing.",
    "__init__", "e.g.", "a.b.c", "lol", "thanks", "deadbeef" * 6, "x" * 40, "HTTP", "Why", "OK",
    "postgres", "redis", "nginx", "linux", "windows", "macos", "ssh", "git", "merge", "rebase",
)  # fmt: skip
_ODD = (
    "🐱", "👍🏻", "🇨🇳", "😂😂", "\u200b", "\u200d", "\ufeff", "\x00", "？", "?", "！", "。", "，", "…",
    "İstanbul", "ΣΑΣ", "K", "Å", "ﬁle", "ß", "Ａｂｃ", "１２３", "ｈｔｔｐ", "\u0301", "e\u0301",
    "\U00020000\U00020001", "\ud7ff", "  ", "\n", "\t", "[图片]", "[CQ:face,id=1]",
)  # fmt: skip
_URLS = (
    "https://github.com/foo/bar/issues/12",
    "http://example.com/a?b=c&d=e",
    "www.bilibili.com/video/BV1xx411c7mD",
    "ftp://files.example.org/pub/x86_64/linux-6.1.tar.gz",
)


def _text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.04:
        return ""
    if roll < 0.06:  # huge: far past every bound on characters and terms
        pool = _CJK_WORDS + _ASCII_WORDS + _ODD
        return "".join(rng.choice(pool) + rng.choice(("", " ", "，")) for _ in range(rng.randint(500, 4_000)))
    kind = rng.random()
    if kind < 0.35:
        pool: tuple[str, ...] = _CJK_WORDS
        sep: tuple[str, ...] = ("", "", "，", " ")
    elif kind < 0.6:
        pool, sep = _ASCII_WORDS, (" ", " ", ", ", "\n")
    else:
        pool, sep = _CJK_WORDS + _ASCII_WORDS + _ODD, ("", " ", "，")
    parts = []
    for _ in range(rng.randint(1, 14)):
        r = rng.random()
        if r < 0.08:
            parts.append(rng.choice(_ODD))
        elif r < 0.11:
            parts.append(rng.choice(_URLS))
        else:
            parts.append(rng.choice(pool))
        parts.append(rng.choice(sep))
    text = "".join(parts)
    if rng.random() < 0.12:
        text += rng.choice(("吗？", "?", "？", "怎么办"))
    return text


def transcript(count: int, seed: int) -> list[Any]:
    """``count`` seeded messages over 12 groups and 3 private chats, times in bursts and pauses."""
    from runtime.kernel.message import ChatKind, ChatMessage

    rng = random.Random(seed)
    chats = [(ChatKind.GROUP, str(200 + g)) for g in range(12)] + [
        (ChatKind.PRIVATE, str(50 + p)) for p in range(3)
    ]
    recent: dict[str, list[tuple[str, str]]] = {}
    out: list[ChatMessage] = []
    t = T0
    for i in range(count):
        gap = rng.random()
        t += (
            rng.expovariate(1 / 2.0) if gap < 0.9 else rng.uniform(200.0, 2_500.0) if gap < 0.99 else 90_000.0
        )
        kind, ident = rng.choice(chats[:6] if rng.random() < 0.6 else chats)
        history = recent.setdefault(ident, [])
        sender = ident if kind is ChatKind.PRIVATE and rng.random() < 0.6 else str(rng.randint(1, 40))
        own = rng.random() < 0.03
        if own:
            sender = BOT
        mentions: tuple[str, ...] = ()
        roll = rng.random()
        if roll < 0.06:
            mentions = (BOT,)
        elif roll < 0.16 and history:
            mentions = tuple(rng.choice(history)[1] for _ in range(rng.randint(1, 3)))
        elif roll < 0.18:
            mentions = (sender, str(rng.randint(1, 40)))
        reply_to = None
        if history and rng.random() < 0.1:
            reply_to = rng.choice(history[-30:])[0]
        elif rng.random() < 0.01:
            reply_to = "unknown-id"
        text = _text(rng)
        if BOT in mentions:
            text = "@灰风 " + text
        message_id = f"m{i}" if rng.random() > 0.005 or not history else history[-1][0]  # a repeated id
        out.append(
            ChatMessage(
                message_id=message_id,
                chat_kind=kind,
                chat_ident=ident,
                sender_id=sender,
                sender_name=f"n{sender}",
                time=t,
                text=text,
                mentions=mentions,
                reply_to=reply_to,
                addressed=BOT in mentions or (kind is ChatKind.PRIVATE and not own),
                from_self=own,
            )
        )
        history.append((message_id, sender))
        if len(history) > 40:
            del history[0]
    return out


def _kernel(settings: Any) -> Any:
    from runtime.kernel.kernel import Kernel
    from runtime.kernel.lexicon.learning import WhitespaceSegmenter
    from runtime.kernel.lexicon.terms import LexiconKey, LexiconScope

    kernel = Kernel(settings, segmenter=WhitespaceSegmenter(), now=T0)
    for g in range(0, 12, 3):
        kernel.lexicon.add(LexiconKey(LexiconScope.GROUP, f"group:{200 + g}"), "火锅", now=T0)
        kernel.lexicon.add(LexiconKey(LexiconScope.GROUP, f"group:{200 + g}"), "python", now=T0)
    return kernel


def run_kernel(name: str, settings: Any, messages: list[Any], out: list[str]) -> None:
    kernel = _kernel(settings)
    for i, message in enumerate(messages):
        out.append(f"{name} ingest {kernel.ingest(message)!r}")
        if i % 37 == 36:
            now = message.time
            for activation in kernel.due(now):
                out.append(f"{name} due {activation!r}")
                if activation.ready:
                    kernel.begin(activation.event.id, now)
                    kernel.finish(activation.event.id, now, "replied")
                    kernel.record_speech(activation.event.chat_id, now)
        if i % 400 == 399:
            out.append(f"{name} prune {kernel.prune(message.time)}")
            out.append(f"{name} statistics {kernel.statistics()!r}")
    out.append(f"{name} statistics {kernel.statistics()!r}")


def run_tracker(messages: list[Any], out: list[str]) -> None:
    """The tracker alone: the link scorer's features before each assignment, then a restore."""
    from runtime.kernel.threads import RestoredMessage, ThreadTracker

    tracker = ThreadTracker()
    kept: list[Any] = []
    for i, message in enumerate(messages):
        if i % 5 == 0:
            out.append(f"features {message.message_id} {tracker.link_features(message)!r}")
        assignment = tracker.assign(message)
        kept.append(RestoredMessage(message, assignment.thread_id))
        out.append(f"assign {assignment!r}")
    out.append(f"tracker statistics {tracker.statistics()!r}")
    half = len(kept) // 2
    restored = ThreadTracker()
    out.append(f"restored {restored.restore(kept[:half], kept[half - 1].message.time)}")
    out.extend(f"after restore {restored.assign(item.message)!r}" for item in kept[half:])
    out.append(f"restored statistics {restored.statistics()!r}")


def dump(count: int, seed: int) -> list[str]:
    from runtime.kernel._features import extract_terms
    from runtime.kernel.settings import KernelSettings
    from runtime.kernel.threads import ThreadSettings

    messages = transcript(count, seed)
    out = [f"terms {extract_terms(m.text)!r} {extract_terms(m.text, 40, 5)!r}" for m in messages]
    base = KernelSettings(self_ids=(BOT,), lexicon_terms=("原神", "猫粮", "数据库", "rust"))
    run_kernel("learned", base, messages, out)
    tight = ThreadSettings(
        scorer="signals",
        max_threads_per_chat=4,
        max_messages_per_chat=30,
        max_candidates=3,
        max_terms_per_thread=4,
        max_feature_chars=60,
        max_terms_per_message=5,
        max_chats=8,
    )
    run_kernel("signals", KernelSettings(self_ids=(BOT,), threads=tight), messages, out)
    run_tracker(messages, out)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--messages", type=int, default=4_000)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    lines = dump(args.messages, args.seed)
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    args.out.write_bytes(data)
    print(f"{len(lines):,} lines, sha256 {hashlib.sha256(data).hexdigest()} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
