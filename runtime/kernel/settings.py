"""Kernel settings: frozen values in kernel units (seconds), built from the config sections.

``KernelSettings.from_config(cfg)`` is the one place where ``[budget]``, ``[attention]``,
``[scheduling]``, ``[threads]``, ``[lexicon]``, ``[bots]`` and ``[persona]`` become kernel values; every
``*_ms`` key is divided by 1000 here. ``KernelSettings()`` holds the same defaults as an empty config file, so
tests and benchmarks can build a kernel without one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from runtime.kernel.attention import AttentionWeights
from runtime.kernel.bots import BotSettings
from runtime.kernel.budget import BudgetPolicy
from runtime.kernel.errors import InvalidSetting
from runtime.kernel.lexicon.settings import LexiconSettings
from runtime.kernel.threads import ThreadSettings

if TYPE_CHECKING:
    from runtime.config.schema import GreyWindConfig

__all__ = ["EventSettings", "KernelSettings", "SchedulingSettings", "Supersede"]


class Supersede(StrEnum):
    """Which older pending activation a newer scheduled message cancels."""

    THREAD = "thread"  # the one in the same conversation thread
    CHAT = "chat"  # the one in the same chat
    NONE = "none"  # none: every scheduled message keeps its activation


@dataclass(frozen=True, slots=True)
class SchedulingSettings:
    """When activations fire (seconds after the message) and what a newer message supersedes."""

    high_delay: float = 2.0
    high_deadline: float = 60.0
    medium_delay: float = 10.0
    medium_deadline: float = 120.0
    forced_deadline: float = 120.0
    supersede: Supersede = Supersede.THREAD
    recently_replied: float = 120.0
    learn_queue_max: int = 5_000
    deliberation_timeout: float = 300.0

    def __post_init__(self) -> None:
        names = ("high_delay", "medium_delay", "forced_deadline", "recently_replied", "deliberation_timeout")
        for name in names:
            if not getattr(self, name) >= 0:
                raise InvalidSetting(f"scheduling.{name}", "must not be negative")
        if not self.high_deadline >= self.high_delay:
            raise InvalidSetting("scheduling.high_deadline", "must not be below scheduling.high_delay")
        if not self.medium_deadline >= self.medium_delay:
            raise InvalidSetting("scheduling.medium_deadline", "must not be below scheduling.medium_delay")
        if self.learn_queue_max < 0:
            raise InvalidSetting("scheduling.learn_queue_max", "must not be negative")


@dataclass(frozen=True, slots=True)
class EventSettings:
    """How long the EventStore keeps finished events, and how many at most."""

    keep_terminal_for: float = 3_600.0
    max_terminal: int = 10_000


# The defaults of an empty config file ([budget] and [budget.forced]).
_NORMAL_BUDGET = BudgetPolicy(min_interval=90.0, max_per_window=4, window=1_800.0)
_FORCED_BUDGET = BudgetPolicy(min_interval=3.0, max_per_window=20, window=600.0)


@dataclass(frozen=True, slots=True)
class KernelSettings:
    """Everything the :class:`~runtime.kernel.kernel.Kernel` needs, in kernel units."""

    budget: BudgetPolicy = _NORMAL_BUDGET
    forced_budget: BudgetPolicy = _FORCED_BUDGET
    attention: AttentionWeights = field(default_factory=AttentionWeights)
    scheduling: SchedulingSettings = field(default_factory=SchedulingSettings)
    threads: ThreadSettings = field(default_factory=ThreadSettings)
    lexicon: LexiconSettings = field(default_factory=LexiconSettings)
    events: EventSettings = field(default_factory=EventSettings)
    # ``[bots]``: other bots, and how many of their messages in a row the bot still answers.
    bots: BotSettings = field(default_factory=BotSettings)
    persona_name: str = "灰风"
    # Other names the bot answers to; with the name, pinned in the persona lexicon key at start.
    persona_aliases: tuple[str, ...] = ("greywind",)
    # ``[lexicon].terms``: pinned under the global key at start.
    lexicon_terms: tuple[str, ...] = ()
    # The bot's own user ids: its outgoing messages and its place in threads are recognised by them.
    self_ids: tuple[str, ...] = ()
    # ``[attention].read_max_chars``: how much of a message the lexicon match and question check read.
    read_max_chars: int = 4_000

    def __post_init__(self) -> None:
        if self.read_max_chars < 16:
            raise InvalidSetting("attention.read_max_chars", "must be at least 16")

    @classmethod
    def from_config(cls, cfg: GreyWindConfig, *, self_ids: tuple[str, ...] = ()) -> KernelSettings:
        """Kernel settings from a validated config (milliseconds become seconds)."""
        b = cfg.budget
        a = cfg.attention
        s = cfg.scheduling
        return cls(
            budget=BudgetPolicy(b.min_interval_ms / 1000.0, b.max_per_window, b.window_ms / 1000.0),
            forced_budget=BudgetPolicy(
                b.forced.min_interval_ms / 1000.0, b.forced.max_per_window, b.forced.window_ms / 1000.0
            ),
            attention=AttentionWeights(
                high=a.high,
                medium=a.medium,
                direct=a.weight_direct,
                question=a.weight_question,
                thread=a.weight_thread,
                keyword=a.weight_keyword,
                silence=a.weight_silence,
                silence_full=a.silence_full_ms / 1000.0,
                recently_replied=a.penalty_recently_replied,
                budget_exhausted=a.penalty_budget_exhausted,
            ),
            scheduling=SchedulingSettings(
                high_delay=s.high_delay_ms / 1000.0,
                high_deadline=s.high_deadline_ms / 1000.0,
                medium_delay=s.medium_delay_ms / 1000.0,
                medium_deadline=s.medium_deadline_ms / 1000.0,
                forced_deadline=s.forced_deadline_ms / 1000.0,
                supersede=Supersede(s.supersede.value),
                recently_replied=s.recently_replied_ms / 1000.0,
                learn_queue_max=s.learn_queue_max,
                deliberation_timeout=s.deliberation_timeout_ms / 1000.0,
            ),
            threads=ThreadSettings.from_config(cfg.threads),
            lexicon=LexiconSettings.from_config(cfg.lexicon),
            bots=BotSettings(
                ids=tuple(cfg.bots.ids),
                max_turns=cfg.bots.max_turns,
                detect_runs=cfg.bots.detect_runs,
                detect_latency=cfg.bots.detect_latency_ms / 1000.0,
            ),
            persona_name=cfg.persona.name,
            persona_aliases=tuple(cfg.persona.aliases),
            lexicon_terms=tuple(cfg.lexicon.terms),
            self_ids=tuple(str(i) for i in self_ids),
            read_max_chars=a.read_max_chars,
        )
