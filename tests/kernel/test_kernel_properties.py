"""Property tests of the Kernel facade over random chat traffic (hypothesis).

A bot that does exactly what the kernel says (answer every ``act_now`` and ``ready`` at once and
record the speech) never breaks a budget, never speaks before an activation's time or after its
deadline, and never holds two pending message activations for one conversation thread.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.kernel.attention import Decision
from runtime.kernel.budget import BudgetPolicy
from runtime.kernel.events import EventState
from runtime.kernel.kernel import ActivationOutcome, IngestAction, Kernel
from runtime.kernel.lexicon.learning import WhitespaceSegmenter
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.settings import KernelSettings, SchedulingSettings

TEXTS = (
    "哈哈哈",
    "灰风 猫粮推荐一下？",
    "原神 今天 更新 了吗",
    "猫粮 好贵",
    "有人 一起 打游戏 吗？",
    "灰风 你怎么看",
    "",
    "🐱🐱 猫粮 🐱",
)

messages = st.tuples(
    st.just("msg"),
    st.floats(min_value=0.0, max_value=40.0),  # time since the previous step
    st.integers(0, 2),  # chat
    st.integers(0, 3),  # sender
    st.sampled_from(TEXTS),
    st.booleans(),  # addressed
)
ticks = st.tuples(
    st.just("tick"),
    st.floats(min_value=0.0, max_value=120.0),
    st.just(0),
    st.just(0),
    st.just(""),
    st.just(False),
)
Step = tuple[str, float, int, int, str, bool]
steps = st.lists(st.one_of(messages, ticks), max_size=60)

NORMAL = BudgetPolicy(min_interval=20.0, max_per_window=3, window=300.0)
FORCED = BudgetPolicy(min_interval=2.0, max_per_window=4, window=120.0)


def check_budgets(speeches: dict[str, list[tuple[float, bool]]]) -> None:
    for spoken in speeches.values():
        for kind, policy in ((False, NORMAL), (True, FORCED)):
            times = [t for t, f in spoken if f is kind]
            for i, start in enumerate(times):
                assert sum(1 for t in times[i:] if t < start + policy.window) <= policy.max_per_window
        for (before, _), (after, forced) in itertools.pairwise(spoken):
            assert after >= before + (FORCED if forced else NORMAL).min_interval


@settings(max_examples=150, deadline=None)
@given(steps=steps)
def test_following_the_kernel_never_breaks_a_rule(steps: list[Step]) -> None:
    kernel = Kernel(
        KernelSettings(
            budget=NORMAL,
            forced_budget=FORCED,
            scheduling=SchedulingSettings(high_delay=1.0, medium_delay=5.0, forced_deadline=30.0),
            self_ids=("bot",),
            lexicon_terms=("猫粮", "原神"),
        ),
        segmenter=WhitespaceSegmenter(),
    )
    now = 0.0
    speeches: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    ids = itertools.count()

    def speak(chat_id: str, event_id: str, forced: bool) -> None:
        kernel.begin(event_id, now)
        kernel.finish(event_id, now, "replied")
        kernel.record_speech(chat_id, now, forced=forced)
        speeches[chat_id].append((now, forced))

    for op, gap, chat, sender, text, addressed in steps:
        now += gap
        if op == "msg":
            message = ChatMessage(
                f"m{next(ids)}", ChatKind.GROUP, str(chat), f"u{sender}", "x", now, text, addressed=addressed
            )
            result = kernel.ingest(message)
            decision = result.decision
            assert (decision is Decision.FORCED) == addressed
            if decision is Decision.LOW:
                assert result.action is IngestAction.RECORDED
            elif decision is not Decision.FORCED:
                assert result.action is IngestAction.SCHEDULED
            if result.action is IngestAction.ACT_NOW:
                assert result.event.state is EventState.ELIGIBLE
                speak(message.chat_id, result.event.id, True)
            if result.activate_at is not None:
                assert result.activate_at >= now
        else:
            for activation in kernel.due(now):
                event = activation.event
                if activation.outcome is ActivationOutcome.READY:
                    assert event.state is EventState.ELIGIBLE
                    assert event.not_before <= now
                    assert event.deadline is None or event.deadline >= now
                    speak(event.chat_id, event.id, event.payload.get("forced") is True)
                else:
                    assert event.terminal
        pending = [kernel.events.require(i) for i in kernel.scheduler.pending_ids()]
        per_thread = Counter(e.thread_id for e in pending if e.kind == "message")
        assert all(n == 1 for n in per_thread.values())
    check_budgets(speeches)
