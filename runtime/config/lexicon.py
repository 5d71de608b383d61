"""``[lexicon]``: the dynamic keyword lexicon (ADR-0002 §7)."""

from __future__ import annotations

from pydantic import Field

from runtime.config._base import Section


class LexiconConfig(Section):
    # Terms every chat listens for (pinned at start), beside the persona's name and aliases.
    terms: tuple[str, ...] = ()
    half_life_ms: int = Field(default=7 * 24 * 3_600_000, ge=60_000)
    max_terms_per_scope: int = Field(default=500, ge=1)
