"""The compression request: the old summary and the new rounds, to the compression role (design/001 ④ step 1).

Each new summary folds in the previous one: the model receives the stored summary and only the
messages after it (``covered_until``), and answers the complete new summary. The transcript is capped
in tokens; when the rounds since the last summary are longer than that, the newest messages are kept —
the older ones stay findable by retrieval of raw history, which is why the memory layer keeps both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

from runtime.kernel.message import SENT_ELSEWHERE_LABEL
from runtime.memory.summary import SummaryBody
from runtime.store.records import StoredMessage

__all__ = ["COMPRESSION_MARKER", "Transcript", "compression_messages", "select_transcript"]

#: The first words of the compression system prompt (tests and logs recognise the request by them).
COMPRESSION_MARKER = "你是记忆压缩器"

_SYSTEM = "\n".join(
    [
        f"{COMPRESSION_MARKER}：把一段群聊/私聊对话压缩成结构化的长期记忆摘要，"
        "供聊天人格体在以后的对话里参考。",
        "",
        "规则：",
        "1. 你会收到【旧摘要】和【新的对话】。输出合并后的完整新摘要：",
        "   旧摘要里仍然成立的内容必须保留，被新对话推翻或已解决的要更新或删除。",
        "2. 具体事实（名字、数字、日期、地点、约定、偏好）要原样保留，不要概括掉。",
        "3. 每一条写成一句独立的话，不要写“如上所述”之类依赖上下文的话。",
        "4. 只输出一个 JSON 对象，不要解释，不要任何别的文字。格式：",
        "{",
        '  "requirements": ["用户提出的需求要点"],',
        '  "confirmed_decisions": ["已经确认的决定、约定和事实"],',
        '  "user_preferences": {"communication_style": "简洁直接/详细解释",',
        '                       "design_preference": "", "tech_level": "基础/中级/高级"},',
        '  "open_questions": ["还没解决的问题"],',
        '  "emotional_signals": {"overall": "积极/消极/中性", "last_mood": "最近一次情感信号"}',
        "}",
    ]
)


@dataclass(frozen=True, slots=True)
class Transcript:
    """The messages one compression sends; ``omitted`` older ones did not fit the cap."""

    messages: tuple[StoredMessage, ...]
    omitted: int
    tokens: int

    @property
    def newest(self) -> float | None:
        return self.messages[-1].time if self.messages else None


def _line(message: StoredMessage, zone: timezone) -> str:
    name = message.sender_name or message.sender_id
    if message.sent_elsewhere:  # the account's owner (or another program), not the persona
        speaker = f"{SENT_ELSEWHERE_LABEL} {name}"
    else:
        speaker = f"{name}（人格体本人）" if message.from_self else name
    stamp = datetime.fromtimestamp(message.time, zone).strftime("%m-%d %H:%M")
    return f"[{stamp}] {speaker}: {message.text}"


def _zone(utc_offset_hours: float) -> timezone:
    return UTC if utc_offset_hours == 0 else timezone(timedelta(hours=utc_offset_hours))


def select_transcript(
    messages: Sequence[StoredMessage],
    *,
    max_tokens: int,
    count: Callable[[str], int],
    utc_offset_hours: float = 8.0,
) -> Transcript:
    """The newest messages whose lines fit ``max_tokens`` (recalled ones left out), oldest first."""
    zone = _zone(utc_offset_hours)
    live = [m for m in messages if not m.recalled and m.text.strip()]
    kept: list[StoredMessage] = []
    used = 0
    for message in reversed(live):
        cost = count(_line(message, zone)) + 1
        if kept and used + cost > max_tokens:
            break
        kept.append(message)
        used += cost
    kept.reverse()
    return Transcript(tuple(kept), len(live) - len(kept), used)


def compression_messages(
    old: SummaryBody,
    transcript: Transcript,
    *,
    first_round: int,
    last_round: int,
    utc_offset_hours: float = 8.0,
) -> list[dict[str, str]]:
    """The chat messages of one compression request."""
    zone = _zone(utc_offset_hours)
    old_json = json.dumps(old.to_json(), ensure_ascii=False, indent=1)
    lines = "\n".join(_line(m, zone) for m in transcript.messages)
    rounds = f"第 {first_round}–{last_round} 轮" if last_round >= first_round else "最近"
    skipped = f"（更早的 {transcript.omitted} 条消息因篇幅省略）\n" if transcript.omitted else ""
    user = (
        f"【旧摘要】\n{old_json}\n\n"
        f"【新的对话】{rounds}，共 {len(transcript.messages)} 条消息：\n{skipped}{lines}\n\n"
        "请输出合并后的完整新摘要 JSON。"
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]
