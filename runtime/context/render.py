"""Slots to text: the deterministic renderings the PromptAssembler puts into chat messages.

Every function is pure and depends only on its slot, so the same slot always renders to the same
bytes — that is what keeps the stable prefix identical from turn to turn (provider prompt caches key on
the exact prefix). Nothing here reads the clock or embeds a time. Headings are Chinese because the
persona speaks Chinese; the model reads them as structure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from runtime.context.packet import (
    ContextPacket,
    DialogueTurn,
    HandoffSlot,
    MemorySummarySlot,
    PersonaSlot,
    RetrievedSlot,
    SessionSlot,
    ThreadSlot,
    UserInputSlot,
    UserProfileSlot,
    VisionSlot,
)
from runtime.kernel.message import SENT_ELSEWHERE_LABEL

__all__ = [
    "render_context",
    "render_handoff",
    "render_memory_summary",
    "render_persona",
    "render_profile",
    "render_retrieved",
    "render_session",
    "render_stable_prefix",
    "render_thread",
    "render_turn",
    "render_user_input",
    "render_vision",
]

_SURFACES = {"group": "QQ群", "private": "QQ私聊"}


def _flat(text: object) -> str:
    """One line: a value with line breaks (a group name, a title, a model's summary) must not be able
    to start a heading of its own inside a system message."""
    return " ".join(str(text).split())


def _bullets(title: str, items: Iterable[str]) -> list[str]:
    flat = [_flat(item) for item in items]
    flat = [item for item in flat if item]
    if not flat:
        return []
    return [f"{title}：", *(f"- {item}" for item in flat)]


def _line(label: str, value: str | None) -> list[str]:
    return [f"{label}：{_flat(value)}"] if value and _flat(value) else []


def render_persona(persona: PersonaSlot) -> str:
    head = f"你是{_flat(persona.name)}。" + (f"{_flat(persona.role)}。" if persona.role else "")
    lines = [
        "# 身份",
        head,
        *_line("与用户的关系", persona.relationship_to_user),
        *_line("说话风格", persona.speaking_style),
        *_line("语言风格", persona.language_style),
        *_bullets("行为准则", persona.behavior_rules),
        *_bullets("稳定偏好", persona.stable_preferences),
    ]
    return "\n".join(lines)


def render_vision(vision: VisionSlot) -> str:
    lines = [
        "# 原始意图（本线程最初想要的，不是派生出的步骤）",
        f"目标：{_flat(vision.origin_goal)}",
        *_bullets("完成标准", vision.done_when),
        *_bullets("不做", vision.non_goals),
        *_bullets("用户看重", vision.user_priorities),
        *_line("质量标准", vision.quality_bar),
    ]
    return "\n".join(lines)


def render_stable_prefix(persona: PersonaSlot | None, vision: VisionSlot | None) -> str:
    """The first system message: what stays the same for every turn of a session."""
    parts = [render_persona(persona)] if persona is not None else []
    if vision is not None:
        parts.append(render_vision(vision))
    return "\n\n".join(parts)


def render_thread(thread: ThreadSlot) -> str:
    title = f"# 当前线程：{_flat(thread.thread_title)}（{_flat(thread.thread_type)}，{thread.thread_id}）"
    task_lines = []
    for task in thread.tasks:
        line = f"- [{task.status}] {_flat(task.title)}（{task.task_id}）"
        if task.conclusion:
            line += f"：{_flat(task.conclusion)}"
        task_lines.append(line)
    listed = {task.task_id for task in thread.tasks}
    unlisted = [task_id for task_id in thread.linked_task_ids if task_id not in listed]
    lines = [
        title,
        *_line("摘要", thread.thread_summary),
        *_line("标签", "、".join(thread.thread_tags)),
        *(["任务：", *task_lines] if task_lines else []),
        *_line("其他任务", "、".join(unlisted)),
    ]
    return "\n".join(lines)


def render_memory_summary(summary: MemorySummarySlot) -> str:
    lines = ["# 记忆摘要（较早对话的压缩）"]
    for section in summary.sections:
        lines.extend(_bullets(section.name, section.items))
    return "\n".join(lines)


def render_profile(profile: UserProfileSlot) -> str:
    lines = [
        f"# 对话者：{_flat(profile.nickname)}（{profile.user_id}）",
        *_line("关系", profile.relationship),
        *_bullets("偏好", profile.preferences),
        *_bullets("备注", profile.notes),
    ]
    return "\n".join(lines)


def _surface(session: SessionSlot) -> list[str]:
    screen = session.screen_context
    if screen is None:
        return []
    where = _SURFACES.get(screen.surface, screen.surface)
    if screen.chat_name:
        where += f"「{_flat(screen.chat_name)}」"
    where += f"（{screen.chat_id}）"
    return [
        f"场合：{where}",
        *_line("正在进行的活动", screen.activity),
        *_line("情况", screen.summary),
    ]


def render_session(session: SessionSlot) -> str:
    lines = [
        f"# 当前会话：{session.session_id}（{session.state}）",
        *_surface(session),
        *_bullets("最近动作", session.recent_actions),
        *_bullets("中断记录", session.interruptions),
        *_line("续接点", session.resume_point),
    ]
    return "\n".join(lines)


def render_handoff(handoff: HandoffSlot) -> str:
    lines = [
        f"# 上一次会话的交接（来自 {handoff.from_session_id}）",
        f"进度：{_flat(handoff.summary)}",
        *_bullets("未完成", handoff.unfinished_items),
        *_bullets("风险", handoff.risks),
        *_line("建议从这里继续", handoff.resume_suggestion),
    ]
    return "\n".join(lines)


def render_retrieved(items: Iterable[RetrievedSlot]) -> str:
    lines = ["# 相关记忆（检索所得，可能不完整）"]
    lines.extend(
        f"- [{r.source_type}:{r.source_id}，{_flat(r.relevance_reason)}，"
        f"置信度 {r.confidence:.2f}] {_flat(r.content)}"
        for r in items
    )
    return "\n".join(lines)


def render_context(packet: ContextPacket) -> str:
    """The second system message: thread, memory summary, profile, session state, handoff, retrieved."""
    parts = []
    if packet.thread is not None:
        parts.append(render_thread(packet.thread))
    if packet.memory_summary is not None and packet.memory_summary.sections:
        parts.append(render_memory_summary(packet.memory_summary))
    if packet.user_profile is not None:
        parts.append(render_profile(packet.user_profile))
    if packet.session is not None:
        parts.append(render_session(packet.session))
    if packet.handoff is not None:
        parts.append(render_handoff(packet.handoff))
    if packet.retrieved:
        parts.append(render_retrieved(packet.retrieved))
    return "\n\n".join(parts)


def render_turn(turn: DialogueTurn) -> Mapping[str, str]:
    """The bot's own turn as the assistant's; its account's, sent by someone else, as a labelled line."""
    if turn.from_self and not turn.sent_elsewhere:
        return {"role": "assistant", "content": turn.text}
    label = f"{SENT_ELSEWHERE_LABEL} " if turn.sent_elsewhere else ""
    return {"role": "user", "content": f"{label}{turn.speaker_name or turn.speaker_id}: {turn.text}"}


def render_user_input(user_input: UserInputSlot, text: str | None = None) -> Mapping[str, str]:
    """The last message. ``text`` replaces ``raw_text`` when the assembler had to shorten it."""
    body = user_input.raw_text if text is None else text
    if user_input.input_type == "text":
        speaker = user_input.sender_name or user_input.sender_id
        content = f"{speaker}: {body}" if speaker else body
    else:
        content = f"[{user_input.input_type}] {body}"
    if user_input.attached_context:
        content = f"（引用：{_flat(user_input.attached_context)}）\n{content}"
    return {"role": "user", "content": content}
