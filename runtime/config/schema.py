"""The whole configuration: one table per section, each with defaults for every key."""

from __future__ import annotations

from runtime.config._base import Section
from runtime.config.kernel import AttentionConfig, BudgetConfig
from runtime.config.lexicon import LexiconConfig
from runtime.config.persona import PersonaConfig
from runtime.config.threads import ThreadsConfig


class GreyWindConfig(Section):
    persona: PersonaConfig = PersonaConfig()
    budget: BudgetConfig = BudgetConfig()
    attention: AttentionConfig = AttentionConfig()
    threads: ThreadsConfig = ThreadsConfig()
    lexicon: LexiconConfig = LexiconConfig()
