"""PromptAssembler: a ContextPacket to OpenAI chat ``messages`` within a token budget (design/000 §11).

Layout, in design/000's order with design/001's layers mapped in::

    system   persona (identity + language style) + vision          <- the stable prefix
    system   thread, memory summary, user profile, session state,
             handoff, retrieved memories
    user/assistant   the session's recent dialogue (its conversation thread, raw)
    user     this turn's input

Stable first, current state in the middle, the input last (§11.3). The first system message depends on
the persona and the thread's vision only, and renders deterministically, so it is byte-identical across
the turns of a session and providers' prompt caches hit.

Any slot may be missing (§11.4): a missing slot is simply not rendered; a packet with no slot at all
still yields a (possibly empty) list. The budget is the context window minus the reply reserve, and the
assembled prompt never exceeds it. When it would, things are trimmed in this order, one piece at a
time, until it fits:

1. retrieved memories, lowest confidence first;
2. session dialogue, oldest turn first;
3. handoff details (risks, then unfinished items), then the handoff;
4. memory summary items, lowest-priority section first, then the summary;
5. user profile details, then the profile;
6. session details (interruptions, oldest actions, surface), then the session slot;
7. thread details (tasks, tags, summary), then the thread slot;
8. vision details, then the vision (the prefix changes only under this much pressure);
9. the user input's quoted context, then its text (cut at the end, marked) — only when the input is
   itself over what is left.

The persona is never trimmed: a budget that cannot hold it raises :class:`BudgetTooSmallError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from runtime.context.errors import BudgetTooSmallError
from runtime.context.packet import ContextPacket, SummarySection
from runtime.context.render import (
    render_context,
    render_memory_summary,
    render_stable_prefix,
    render_turn,
    render_user_input,
)
from runtime.context.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, RoughTokenCounter, TokenCounter

__all__ = ["TRIM_ORDER", "AssembledPrompt", "AssemblerStatistics", "PromptAssembler"]

TRUNCATION_MARK = "…（后略）"

#: Stage names in the order they are applied; ``AssembledPrompt.trimmed`` reports counts under them.
TRIM_ORDER = (
    "retrieved",
    "dialogue",
    "handoff",
    "memory_summary",
    "user_profile",
    "session",
    "thread",
    "vision",
    "user_input",
)


@dataclass(frozen=True, slots=True)
class AssembledPrompt:
    """The model's input for one turn and what it cost.

    ``packet`` is the packet as sent (after trimming); ``trimmed`` maps trim stages to how many pieces
    each removed (empty when everything fit).
    """

    messages: tuple[Mapping[str, str], ...]
    tokens: int
    budget: int
    stable_prefix: str
    trimmed: tuple[tuple[str, int], ...]
    packet: ContextPacket

    def as_messages(self) -> list[dict[str, str]]:
        """A fresh list of dicts, ready for the Chat Completions ``messages`` field."""
        return [dict(message) for message in self.messages]

    def debug_dump(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "budget": self.budget,
            "trimmed": dict(self.trimmed),
            "present_slots": list(self.packet.present_slots()),
            "packet": self.packet.to_debug_dict(),
            "messages": self.as_messages(),
        }

    def debug_json(self) -> str:
        return json.dumps(self.debug_dump(), ensure_ascii=False, indent=2)


@dataclass(frozen=True, slots=True)
class AssemblerStatistics:
    assembled: int
    trimmed: int
    inputs_truncated: int
    budget: int
    last_tokens: int
    max_tokens: int


_Step = Callable[[ContextPacket], ContextPacket | None]


def _trim_retrieved(p: ContextPacket) -> ContextPacket | None:
    if not p.retrieved:
        return None
    weakest = min(range(len(p.retrieved)), key=lambda i: (p.retrieved[i].confidence, -i))
    return replace(p, retrieved=p.retrieved[:weakest] + p.retrieved[weakest + 1 :])


def _trim_handoff(p: ContextPacket) -> ContextPacket | None:
    h = p.handoff
    if h is None:
        return None
    if h.risks:
        return replace(p, handoff=replace(h, risks=h.risks[:-1]))
    if h.unfinished_items:
        return replace(p, handoff=replace(h, unfinished_items=h.unfinished_items[:-1]))
    return replace(p, handoff=None)


def _trim_summary(p: ContextPacket) -> ContextPacket | None:
    s = p.memory_summary
    if s is None:
        return None
    sections = list(s.sections)
    while sections and not sections[-1].items:
        sections.pop()
    if not sections:
        return replace(p, memory_summary=None)
    last = sections[-1]
    if len(last.items) > 1:
        sections[-1] = SummarySection(last.name, last.items[:-1])
    else:
        sections.pop()
    if not sections:
        return replace(p, memory_summary=None)
    return replace(p, memory_summary=replace(s, sections=tuple(sections)))


def _trim_profile(p: ContextPacket) -> ContextPacket | None:
    u = p.user_profile
    if u is None:
        return None
    if u.notes:
        return replace(p, user_profile=replace(u, notes=u.notes[:-1]))
    if u.preferences:
        return replace(p, user_profile=replace(u, preferences=u.preferences[:-1]))
    return replace(p, user_profile=None)


def _trim_session(p: ContextPacket) -> ContextPacket | None:
    s = p.session
    if s is None:
        return None
    if s.interruptions:
        return replace(p, session=replace(s, interruptions=s.interruptions[1:]))
    if s.recent_actions:
        return replace(p, session=replace(s, recent_actions=s.recent_actions[1:]))
    if s.screen_context is not None and (s.screen_context.summary or s.screen_context.activity):
        screen = replace(s.screen_context, summary="", activity=None)
        return replace(p, session=replace(s, screen_context=screen))
    return replace(p, session=None)


def _trim_thread(p: ContextPacket) -> ContextPacket | None:
    t = p.thread
    if t is None:
        return None
    if t.tasks:
        return replace(p, thread=replace(t, tasks=t.tasks[:-1]))
    if t.linked_task_ids:
        return replace(p, thread=replace(t, linked_task_ids=()))
    if t.thread_tags:
        return replace(p, thread=replace(t, thread_tags=()))
    if t.thread_summary:
        return replace(p, thread=replace(t, thread_summary=""))
    return replace(p, thread=None)


def _trim_vision(p: ContextPacket) -> ContextPacket | None:
    v = p.vision
    if v is None:
        return None
    for name in ("non_goals", "user_priorities", "done_when"):
        items = getattr(v, name)
        if items:
            return replace(p, vision=replace(v, **{name: items[:-1]}))
    if v.quality_bar:
        return replace(p, vision=replace(v, quality_bar=""))
    return replace(p, vision=None)


# Stages that touch the context system message; "dialogue" and "vision" are handled apart because
# they touch other messages.
_CONTEXT_STEPS: dict[str, _Step] = {
    "retrieved": _trim_retrieved,
    "handoff": _trim_handoff,
    "memory_summary": _trim_summary,
    "user_profile": _trim_profile,
    "session": _trim_session,
    "thread": _trim_thread,
}


class PromptAssembler:
    """Turns packets into prompts that fit ``context_window - reply_reserve`` tokens."""

    __slots__ = (
        "_assembled",
        "_budget",
        "_counter",
        "_last_tokens",
        "_max_tokens",
        "_prefix_cache",
        "_summary_cap",
        "_trimmed",
        "_truncated",
    )

    def __init__(
        self,
        *,
        context_window: int,
        reply_reserve: int,
        counter: TokenCounter | None = None,
        summary_max_tokens: int | None = None,
    ) -> None:
        """``summary_max_tokens`` caps the memory summary on its own (design/001: ≤ 8k), whatever
        room the budget has; it is trimmed by section priority like under budget pressure."""
        if reply_reserve < 0 or context_window <= reply_reserve:
            raise ValueError(f"context window {context_window} minus {reply_reserve} is empty")
        self._budget = context_window - reply_reserve
        self._counter: TokenCounter = counter if counter is not None else RoughTokenCounter()
        self._prefix_cache: tuple[object, object, str, int] | None = None
        self._summary_cap = summary_max_tokens
        self._assembled = 0
        self._trimmed = 0
        self._truncated = 0
        self._last_tokens = 0
        self._max_tokens = 0

    @property
    def budget(self) -> int:
        return self._budget

    def _prefix(self, packet: ContextPacket) -> tuple[str, int]:
        cached = self._prefix_cache
        if cached is not None and cached[0] == packet.persona and cached[1] == packet.vision:
            return cached[2], cached[3]
        text = render_stable_prefix(packet.persona, packet.vision)
        tokens = self._counter.count(text) + MESSAGE_OVERHEAD if text else 0
        self._prefix_cache = (packet.persona, packet.vision, text, tokens)
        return text, tokens

    def _context(self, packet: ContextPacket) -> tuple[str, int]:
        text = render_context(packet)
        return text, (self._counter.count(text) + MESSAGE_OVERHEAD if text else 0)

    def _input_tokens(self, packet: ContextPacket, text: str | None = None) -> int:
        if packet.user_input is None:
            return 0
        return self._counter.count(render_user_input(packet.user_input, text)["content"]) + MESSAGE_OVERHEAD

    def assemble(self, packet: ContextPacket) -> AssembledPrompt:
        """The prompt for ``packet``, never over budget; :class:`BudgetTooSmallError` if the persona is."""
        budget = self._budget
        counts = dict.fromkeys(TRIM_ORDER, 0)
        packet = self._dedupe_input(packet)
        if self._summary_cap is not None:
            while packet.memory_summary is not None and (
                self._counter.count(render_memory_summary(packet.memory_summary)) > self._summary_cap
            ):
                trimmed_summary = _trim_summary(packet)
                assert trimmed_summary is not None
                packet = trimmed_summary
                counts["memory_summary"] += 1

        prefix, prefix_tokens = self._prefix(packet)
        context, context_tokens = self._context(packet)
        dialogue = packet.session.recent_dialogue if packet.session is not None else ()
        turn_tokens = [self._counter.count(render_turn(t)["content"]) + MESSAGE_OVERHEAD for t in dialogue]
        dialogue_tokens = sum(turn_tokens)
        input_tokens = self._input_tokens(packet)

        def total() -> int:
            return REPLY_PRIMING + prefix_tokens + context_tokens + dialogue_tokens + input_tokens

        stage = 0
        input_text: str | None = None
        while total() > budget:
            name = TRIM_ORDER[stage]
            if name == "dialogue":
                if not turn_tokens:
                    stage += 1
                    continue
                assert packet.session is not None
                dialogue_tokens -= turn_tokens.pop(0)
                older = packet.session.recent_dialogue[1:]
                packet = replace(packet, session=replace(packet.session, recent_dialogue=older))
            elif name == "vision":
                trimmed = _trim_vision(packet)
                if trimmed is None:
                    stage += 1
                    continue
                packet = trimmed
                prefix, prefix_tokens = self._prefix(packet)
            elif name == "user_input":
                room = budget - (total() - input_tokens)
                packet, input_text, input_tokens = self._truncate_input(packet, room)
                counts[name] += 1
                break
            else:
                trimmed = _CONTEXT_STEPS[name](packet)
                if trimmed is None:
                    stage += 1
                    continue
                packet = trimmed
                context, context_tokens = self._context(packet)
                if name == "session" and packet.session is None:
                    turn_tokens.clear()
                    dialogue_tokens = 0
            counts[name] += 1

        messages: list[Mapping[str, str]] = []
        if prefix:
            messages.append({"role": "system", "content": prefix})
        if context:
            messages.append({"role": "system", "content": context})
        if packet.session is not None:
            messages.extend(render_turn(t) for t in packet.session.recent_dialogue)
        if packet.user_input is not None:
            messages.append(render_user_input(packet.user_input, input_text))
        tokens = total()
        trimmed_counts = tuple((name, n) for name, n in counts.items() if n)
        self._assembled += 1
        self._trimmed += bool(trimmed_counts)
        self._last_tokens = tokens
        self._max_tokens = max(self._max_tokens, tokens)
        return AssembledPrompt(
            messages=tuple(messages),
            tokens=tokens,
            budget=budget,
            stable_prefix=prefix,
            trimmed=trimmed_counts,
            packet=packet,
        )

    @staticmethod
    def _dedupe_input(packet: ContextPacket) -> ContextPacket:
        """Drop the input's own message from the dialogue, so it is not sent twice."""
        s, u = packet.session, packet.user_input
        if s is None or u is None or u.message_id is None:
            return packet
        kept = tuple(t for t in s.recent_dialogue if t.message_id != u.message_id)
        if len(kept) == len(s.recent_dialogue):
            return packet
        return replace(packet, session=replace(s, recent_dialogue=kept))

    def _truncate_input(self, packet: ContextPacket, room: int) -> tuple[ContextPacket, str | None, int]:
        """Shorten the input to ``room`` tokens: first its quoted context, then its text from the end."""
        u = packet.user_input
        if u is None:
            raise BudgetTooSmallError(self._budget, self._budget - room)
        if u.attached_context:
            packet = replace(packet, user_input=replace(u, attached_context=None))
            u = packet.user_input
            assert u is not None
            tokens = self._input_tokens(packet)
            if tokens <= room:
                return packet, None, tokens
        text = u.raw_text
        lo, hi = 0, len(text)  # the longest prefix that fits, by bisection
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._input_tokens(packet, text[:mid] + TRUNCATION_MARK) <= room:
                lo = mid
            else:
                hi = mid - 1
        cut = text[:lo] + TRUNCATION_MARK
        tokens = self._input_tokens(packet, cut)
        if tokens > room:
            raise BudgetTooSmallError(self._budget, self._budget - room + tokens)
        self._truncated += 1
        return packet, cut, tokens

    def statistics(self) -> AssemblerStatistics:
        return AssemblerStatistics(
            assembled=self._assembled,
            trimmed=self._trimmed,
            inputs_truncated=self._truncated,
            budget=self._budget,
            last_tokens=self._last_tokens,
            max_tokens=self._max_tokens,
        )
