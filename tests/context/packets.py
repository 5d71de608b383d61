"""Slot values for the Context Runtime's tests: one full packet and the pieces to vary it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace

from runtime.context.packet import (
    SLOT_NAMES,
    ContextPacket,
    DialogueTurn,
    HandoffSlot,
    MemorySummarySlot,
    PersonaSlot,
    RetrievedSlot,
    ScreenContext,
    SessionSlot,
    SummarySection,
    TaskLine,
    ThreadSlot,
    UserInputSlot,
    UserProfileSlot,
    VisionSlot,
)

PERSONA = PersonaSlot(
    name="灰风",
    role="高效的个人AI助手",
    speaking_style="简洁直接，不废话",
    behavior_rules=("优先说明当前判断", "不虚构已完成的操作", "必要时明确风险"),
    relationship_to_user="长期陪伴与执行型个人助手",
    stable_preferences=("优先保持连续上下文", "先解决当前任务再扩展"),
    language_style="口语化的中文，短句",
)

VISION = VisionSlot(
    origin_goal="把灰风做成一个真正可持续生长的个人助手，而不是一次性拼装品",
    done_when=("可以自然对话", "可以理解当前工作上下文", "能逐步长出任务能力"),
    non_goals=("首版不追求完整蜂巢", "首版不追求复杂向量系统"),
    user_priorities=("生长式设计", "连续人格感", "MVP先活起来"),
    quality_bar="不是功能堆砌，而是能稳定演化",
)

THREAD = ThreadSlot(
    thread_id="topic-arch",
    thread_title="灰风系统架构设计",
    thread_type="design",
    thread_summary="围绕灰风的整体系统架构、生长式设计、上下文运行时展开",
    linked_task_ids=("task-doc",),
    thread_tags=("architecture", "context-runtime"),
    tasks=(TaskLine("task-doc", "写 context-runtime.md", "in_progress"),),
)


def turn(n: int, text: str | None = None, *, bot: bool = False) -> DialogueTurn:
    return DialogueTurn(
        speaker_id="bot" if bot else f"u{n % 3}",
        speaker_name="灰风" if bot else f"群友{n % 3}",
        text=text or f"第{n}句：我们继续讨论上下文运行时的第{n}个细节",
        time=1000.0 + n,
        from_self=bot,
        message_id=f"m{n}",
    )


SESSION = SessionSlot(
    session_id="sess-1",
    state="active",
    recent_dialogue=tuple(turn(n, bot=n % 4 == 3) for n in range(12)),
    recent_actions=("生成 architecture-v2 文档草案",),
    screen_context=ScreenContext(surface="group", chat_id="group:1", chat_name="灰风开发群", activity=None),
    interruptions=("工具执行被打断：搜索超时",),
    resume_point="继续完善 Context Runtime 的数据结构与生命周期",
)

HANDOFF = HandoffSlot(
    from_session_id="sess-0",
    to_session_id="sess-1",
    summary="已完成 architecture-v2 主体，下一步需展开 context-runtime 设计",
    unfinished_items=("定义 slot 结构", "定义 session lifecycle", "定义 retrieval 策略"),
    risks=("不要退回纯记忆注入思路", "不要忽略 thread/session 区分"),
    resume_suggestion="优先完成 context-runtime.md",
)

RETRIEVED = (
    RetrievedSlot(
        "lesson", "lesson-8", "正在讨论 session 管理", "session 不等于 thread，本体应以 thread 隔离", 0.92
    ),
    RetrievedSlot("task", "task-old", "同线程的历史任务结论", "architecture-v1 已废弃，原因是串线", 0.55),
    RetrievedSlot(
        "message", "group:1/m3", "全文匹配：handoff", "群友说 handoff 只写继续需要的最少信息", 0.31
    ),
)

USER_INPUT = UserInputSlot(
    raw_text="继续",
    input_type="text",
    timestamp=2000.0,
    sender_id="u1",
    sender_name="群友1",
    message_id="m99",
)

PROFILE = UserProfileSlot(
    user_id="u1", nickname="群友1", preferences=("喜欢简短回答",), relationship="老朋友"
)

SUMMARY = MemorySummarySlot(
    sections=(
        SummarySection("confirmed_decisions", ("用 SQLite 存线程", "thread 与 session 分开")),
        SummarySection("requirements", ("重启后能续上",)),
        SummarySection("open_questions", ("向量库什么时候上",)),
    ),
    version=3,
    rounds_processed=47,
)

FULL = ContextPacket(
    chat_id="group:1",
    persona=PERSONA,
    vision=VISION,
    thread=THREAD,
    session=SESSION,
    handoff=HANDOFF,
    retrieved=RETRIEVED,
    user_input=USER_INPUT,
    user_profile=PROFILE,
    memory_summary=SUMMARY,
    conversation_thread_id="th-1",
)

_MISSING = {name: (() if name == "retrieved" else None) for name in SLOT_NAMES}


def combinations() -> Iterator[tuple[tuple[str, ...], ContextPacket]]:
    """All 2^7 present/missing combinations of the seven slots (profile and summary kept)."""
    for mask in itertools.product((True, False), repeat=len(SLOT_NAMES)):
        missing = {
            name: _MISSING[name] for name, present in zip(SLOT_NAMES, mask, strict=True) if not present
        }
        present = tuple(name for name, keep in zip(SLOT_NAMES, mask, strict=True) if keep)
        yield present, replace(FULL, **missing)
