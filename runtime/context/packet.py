"""The ContextPacket: everything the model sees on one turn, as values (design/000 §5–6).

Seven slots, in design/000's order — persona, vision, thread, session, handoff, retrieved, user input —
plus the two layers of design/001 that are not already one of them: the user profile (layer 3) and the
rolling memory summary (layer 4). design/001's identity and language style (layers 1–2) are the
:class:`PersonaSlot`; its "last N rounds raw" (layer 5) is :attr:`SessionSlot.recent_dialogue`.

Every slot may be missing (``None``, or no retrieved items): the PromptAssembler degrades around any
combination (design/000 §11.4). The packet holds no I/O handles, so it can be dumped as JSON for debugging
(:meth:`ContextPacket.to_debug_json`) and compared in tests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "SLOT_NAMES",
    "ContextPacket",
    "DialogueTurn",
    "HandoffSlot",
    "MemorySummarySlot",
    "PersonaSlot",
    "RetrievedSlot",
    "ScreenContext",
    "SessionSlot",
    "SummarySection",
    "TaskLine",
    "ThreadSlot",
    "UserInputSlot",
    "UserProfileSlot",
    "VisionSlot",
]

#: The seven slots of design/000 §5, in assembly order.
SLOT_NAMES = ("persona", "vision", "thread", "session", "handoff", "retrieved", "user_input")


def _strings(value: Any) -> tuple[str, ...]:
    """A JSON list (or a lone string) as a tuple of non-empty strings; anything else is empty."""
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list | tuple):
        return tuple(str(item) for item in value if str(item).strip())
    return ()


@dataclass(frozen=True, slots=True)
class PersonaSlot:
    """Who the bot is (design/000 §6.1), with design/001's language style as its second layer."""

    name: str
    role: str = ""
    speaking_style: str = ""
    behavior_rules: tuple[str, ...] = ()
    relationship_to_user: str = ""
    stable_preferences: tuple[str, ...] = ()
    language_style: str = ""

    @classmethod
    def from_config(cls, config: Any) -> PersonaSlot:
        """Build from the ``[persona]`` section (any object with its field names)."""
        return cls(
            name=config.name,
            role=config.role,
            speaking_style=config.speaking_style,
            behavior_rules=tuple(config.behavior_rules),
            relationship_to_user=config.relationship_to_user,
            stable_preferences=tuple(config.stable_preferences),
            language_style=getattr(config, "language_style", ""),
        )


@dataclass(frozen=True, slots=True)
class VisionSlot:
    """The original intent of a topic thread (design/000 §6.2): verbatim, never a compressed copy."""

    origin_goal: str
    done_when: tuple[str, ...] = ()
    non_goals: tuple[str, ...] = ()
    user_priorities: tuple[str, ...] = ()
    quality_bar: str = ""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> VisionSlot | None:
        """From a thread's ``vision`` JSON; ``None`` when it holds no goal (no vision is "no slot")."""
        if not data:
            return None
        goal = str(data.get("origin_goal") or "").strip()
        if not goal:
            return None
        return cls(
            origin_goal=goal,
            done_when=_strings(data.get("done_when")),
            non_goals=_strings(data.get("non_goals")),
            user_priorities=_strings(data.get("user_priorities")),
            quality_bar=str(data.get("quality_bar") or ""),
        )

    def to_mapping(self) -> dict[str, Any]:
        return {
            "origin_goal": self.origin_goal,
            "done_when": list(self.done_when),
            "non_goals": list(self.non_goals),
            "user_priorities": list(self.user_priorities),
            "quality_bar": self.quality_bar,
        }


@dataclass(frozen=True, slots=True)
class TaskLine:
    """A task under the thread, as the ThreadSlot shows it."""

    task_id: str
    title: str
    status: str
    conclusion: str | None = None


@dataclass(frozen=True, slots=True)
class ThreadSlot:
    """The long-lived topic thread of this turn (design/000 §6.3), the first wall against cross-talk."""

    thread_id: str
    thread_title: str
    thread_type: str = "chat"
    thread_summary: str = ""
    linked_task_ids: tuple[str, ...] = ()
    thread_tags: tuple[str, ...] = ()
    tasks: tuple[TaskLine, ...] = ()


@dataclass(frozen=True, slots=True)
class ScreenContext:
    """The ``screen_context`` of design/000 mapped onto the chat surface: where the bot is talking.

    ``surface`` is ``group`` or ``private``; ``activity`` the game or activity the bot is in, if any.
    """

    surface: str
    chat_id: str
    chat_name: str = ""
    activity: str | None = None
    summary: str = ""


@dataclass(frozen=True, slots=True)
class DialogueTurn:
    """One message of the session's recent dialogue; ``from_self`` marks the bot's own turns, and
    ``sent_elsewhere`` those of its account it did not send (``ChatMessage.sent_elsewhere``)."""

    speaker_id: str
    speaker_name: str
    text: str
    time: float
    from_self: bool = False
    message_id: str | None = None
    sent_elsewhere: bool = False


@dataclass(frozen=True, slots=True)
class SessionSlot:
    """The current working window (design/000 §6.4): the shortest-lived, fastest-changing layer.

    ``recent_dialogue`` comes from the triggering message's conversation thread only (plus the bot's
    own turns in it), oldest first; it is design/001's "last N rounds raw".
    """

    session_id: str
    state: str = "active"
    recent_dialogue: tuple[DialogueTurn, ...] = ()
    recent_actions: tuple[str, ...] = ()
    screen_context: ScreenContext | None = None
    interruptions: tuple[str, ...] = ()
    resume_point: str | None = None


@dataclass(frozen=True, slots=True)
class HandoffSlot:
    """What the previous session of this topic thread handed over (design/000 §6.5)."""

    from_session_id: str
    summary: str
    to_session_id: str | None = None
    unfinished_items: tuple[str, ...] = ()
    risks: tuple[str, ...] = ()
    resume_suggestion: str = ""


@dataclass(frozen=True, slots=True)
class RetrievedSlot:
    """One retrieved piece of history (design/000 §6.6); the packet holds at most a handful."""

    source_type: str
    source_id: str
    relevance_reason: str
    content: str
    confidence: float


@dataclass(frozen=True, slots=True)
class UserInputSlot:
    """This turn's input in its raw form (design/000 §6.7).

    ``input_type`` is ``text`` for a chat message; a proactive activation carries its cue as
    ``proactive`` (no one spoke, the bot decided to).
    """

    raw_text: str
    input_type: str = "text"
    timestamp: float = 0.0
    attached_context: str | None = None
    # The message id the attached context quotes, when it is a reply (not rendered).
    attached_context_id: str | None = None
    sender_id: str = ""
    sender_name: str = ""
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class UserProfileSlot:
    """Layer 3 of design/001: what the bot knows of the person speaking."""

    user_id: str
    nickname: str
    preferences: tuple[str, ...] = ()
    relationship: str = ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SummarySection:
    """One part of the rolling summary (``confirmed_decisions``, ``requirements``...)."""

    name: str
    items: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MemorySummarySlot:
    """Layer 4 of design/001: the rolling memory summary, sections in priority order (first kept longest)."""

    sections: tuple[SummarySection, ...]
    version: int = 0
    rounds_processed: int = 0

    @classmethod
    def from_summary(cls, document: Mapping[str, Any], priority: tuple[str, ...] = ()) -> MemorySummarySlot:
        """From design/001's ``compressed.json`` document; sections follow ``priority``, then the rest.

        Dict-valued sections (``user_preferences``, ``emotional_signals``) become ``key: value`` items.
        """
        body = document.get("summary", document)
        body = body if isinstance(body, Mapping) else {}
        names = [name for name in priority if name in body]
        names += sorted(name for name in body if name not in names)
        sections: list[SummarySection] = []
        for name in names:
            value = body[name]
            if isinstance(value, Mapping):
                items = tuple(f"{key}: {val}" for key, val in value.items() if str(val).strip())
            else:
                items = _strings(value)
            if items:
                sections.append(SummarySection(name, items))
        return cls(
            sections=tuple(sections),
            version=int(document.get("version", 0) or 0),
            rounds_processed=int(document.get("total_rounds_processed", 0) or 0),
        )


@dataclass(frozen=True, slots=True)
class ContextPacket:
    """One turn's context. Every slot is optional; ``retrieved`` empty means "no retrieved slot".

    ``chat_id`` and ``conversation_thread_id`` say where the turn happens; ``reason`` why a packet was
    built at all (``forced``, ``high``, ``medium``, ``proactive``).
    """

    chat_id: str
    persona: PersonaSlot | None = None
    vision: VisionSlot | None = None
    thread: ThreadSlot | None = None
    session: SessionSlot | None = None
    handoff: HandoffSlot | None = None
    retrieved: tuple[RetrievedSlot, ...] = ()
    user_input: UserInputSlot | None = None
    user_profile: UserProfileSlot | None = None
    memory_summary: MemorySummarySlot | None = None
    conversation_thread_id: str | None = None
    reason: str = "forced"
    notes: tuple[str, ...] = field(default=())

    def present_slots(self) -> tuple[str, ...]:
        """The seven-slot names that hold something, in assembly order."""
        return tuple(name for name in SLOT_NAMES if getattr(self, name) not in (None, ()))

    def to_debug_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_debug_json(self) -> str:
        """The packet as indented JSON (Chinese kept readable), for logs and the admin ``context`` dump."""
        return json.dumps(self.to_debug_dict(), ensure_ascii=False, indent=2, sort_keys=False)
