"""The parts of the running bot that need nothing but the config and the clock, made first, no I/O:
the kernel (with ids unique across restarts), the waiting room, the tool and extension registries,
the LifeDirector, the model router, the persona, and the small bounded books the message path keeps
(recent messages, deliveries, the why log, quiet periods, recalled messages); the message listeners
extensions add to.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from runtime.app.deliveries import RecentDeliveries
from runtime.app.ids import RestoringIds
from runtime.app.persona import Persona
from runtime.app.why import WhyLog
from runtime.config import GreyWindConfig
from runtime.context.builder import RecentBuffer
from runtime.episodes import EpisodeSettings, WaitingRoom, tool_registry_from_config
from runtime.extensions import ChatActivityLog, ExtensionRegistry, LifeDirector, LifeSettings, Scope
from runtime.extensions.listeners import MessageListeners
from runtime.extensions.open_questions import OpenQuestions
from runtime.extensions.spec import LifeSourceSpec
from runtime.groups import GroupPolicy
from runtime.kernel.clock import Clock
from runtime.kernel.kernel import Kernel
from runtime.kernel.settings import KernelSettings
from runtime.llm.router import ModelRouter
from runtime.ports import EdgeContext
from runtime.quiet import QuietPeriod
from runtime.tools import ToolRegistry

__all__ = ["CoreParts", "core_parts"]


class _FunctionClock:
    """The edge's ``clock()`` callable seen as a kernel ``Clock``."""

    __slots__ = ("_read",)

    def __init__(self, read: Callable[[], float]) -> None:
        self._read = read

    def now(self) -> float:
        return self._read()


@dataclass(frozen=True, slots=True)
class CoreParts:
    """What needs nothing but the config and the clock: made first, no I/O."""

    config: GreyWindConfig
    clock: Callable[[], float]
    clock_obj: Clock  # the same clock, as the kernel-side parts take it
    ids: RestoringIds
    kernel: Kernel
    persona: Persona
    episode_settings: EpisodeSettings
    room: WaitingRoom
    tools: ToolRegistry
    scope: Scope
    extensions: ExtensionRegistry
    listeners: MessageListeners
    activity: ChatActivityLog
    life_settings: LifeSettings
    director: LifeDirector
    questions: OpenQuestions  # what was asked of the bot and never answered: a life source
    recent: RecentBuffer
    deliveries: RecentDeliveries
    why: WhyLog
    quiet: dict[str, QuietPeriod]
    groups: GroupPolicy  # the groups the bot lives in (config, then /enable and /disable)
    recalled: OrderedDict[tuple[str, str], None]
    router: ModelRouter
    model_ready: bool


def core_parts(edge: EdgeContext, router: ModelRouter | None = None) -> CoreParts:
    """The parts that need nothing but the config and the clock (the router: unless one is given)."""
    config = edge.config
    clock = edge.clock
    clock_obj = _FunctionClock(clock)
    ids = RestoringIds(clock_obj)
    # The kernel queues texts for lexicon learning ([scheduling] learn_queue_max); maintenance learns
    # them off the loop.
    kernel = Kernel(KernelSettings.from_config(config), ids=ids, now=clock())
    episode_settings = EpisodeSettings.from_config(config.episodes)
    tools = tool_registry_from_config(config.episodes)
    extensions = ExtensionRegistry(tools, clock=clock_obj, lexicon=kernel.lexicon)
    activity = ChatActivityLog()
    life_settings = LifeSettings.from_config(config.life)
    router = router if router is not None else ModelRouter.from_config(config, wall=clock)
    questions = OpenQuestions(after=life_settings.follow_up_after, within=life_settings.follow_up_within)
    scope = Scope("runtime")
    extensions.register_life_source(
        scope.child("open_questions"), LifeSourceSpec("open_questions", questions.poll, life_settings.tick)
    )
    return CoreParts(
        config=config,
        clock=clock,
        clock_obj=clock_obj,
        ids=ids,
        kernel=kernel,
        persona=Persona(config.persona),
        episode_settings=episode_settings,
        room=WaitingRoom(kernel, episode_settings),
        tools=tools,
        scope=scope,
        extensions=extensions,
        activity=activity,
        life_settings=life_settings,
        director=LifeDirector(extensions, kernel, activity, clock=clock_obj, settings=life_settings),
        questions=questions,
        listeners=MessageListeners(timeout=config.extensions.listener_timeout_ms / 1000),
        recent=RecentBuffer(),
        deliveries=RecentDeliveries(),
        why=WhyLog(config.runtime.why_per_chat),
        quiet={},
        groups=GroupPolicy(config.groups.allow, config.groups.deny),
        recalled=OrderedDict(),
        router=router,
        model_ready=edge.model_configured and router.configured,
    )
