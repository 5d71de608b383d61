"""The whole configuration: one table per section, each with defaults for every key."""

from __future__ import annotations

from pydantic import field_validator

from runtime.config._base import Section
from runtime.config.accounts import AccountConfig, listed_once
from runtime.config.app import AppConfig
from runtime.config.bot import BotConfig, OutboundConfig
from runtime.config.bots import BotsConfig
from runtime.config.context import ContextConfig
from runtime.config.episodes import EpisodesConfig
from runtime.config.extensions import ExtensionsConfig
from runtime.config.groups import GroupsConfig
from runtime.config.kernel import AttentionConfig, BudgetConfig, SchedulingConfig
from runtime.config.lexicon import LexiconConfig
from runtime.config.life import LifeConfig
from runtime.config.mcp import McpConfig
from runtime.config.memory_injection import MemoryInjectionConfig
from runtime.config.models import ModelsConfig
from runtime.config.persona import PersonaConfig
from runtime.config.store import StoreConfig
from runtime.config.threads import ThreadsConfig


class GreyWindConfig(Section):
    persona: PersonaConfig = PersonaConfig()
    budget: BudgetConfig = BudgetConfig()
    attention: AttentionConfig = AttentionConfig()
    threads: ThreadsConfig = ThreadsConfig()
    lexicon: LexiconConfig = LexiconConfig()
    scheduling: SchedulingConfig = SchedulingConfig()
    models: ModelsConfig = ModelsConfig()
    memory_injection: MemoryInjectionConfig = MemoryInjectionConfig()
    bot: BotConfig = BotConfig()
    outbound: OutboundConfig = OutboundConfig()
    context: ContextConfig = ContextConfig()
    episodes: EpisodesConfig = EpisodesConfig()
    life: LifeConfig = LifeConfig()
    store: StoreConfig = StoreConfig()
    runtime: AppConfig = AppConfig()
    extensions: ExtensionsConfig = ExtensionsConfig()
    groups: GroupsConfig = GroupsConfig()
    bots: BotsConfig = BotsConfig()
    mcp: McpConfig = McpConfig()
    # [[accounts]]: per QQ account, keys layered over the tables above (runtime.config.accounts).
    accounts: tuple[AccountConfig, ...] = ()

    @field_validator("accounts")
    @classmethod
    def _each_once(cls, accounts: tuple[AccountConfig, ...]) -> tuple[AccountConfig, ...]:
        return listed_once(accounts)

    def account_ids(self) -> tuple[str, ...]:
        """The QQ numbers of the ``[[accounts]]`` tables, in order (empty: one account stack)."""
        return tuple(account.id for account in self.accounts)
