"""``[lexicon]``: the dynamic keyword lexicon (design/0002 §7).

Weights and confidences are in [0, 1]. Learned terms start at ``initial_weight`` and gain
``repeat_step`` each time a batch sees them again; terms not seen lose half their weight every
``half_life_ms`` and are deleted below ``delete_below`` unless pinned.
"""

from __future__ import annotations

from pydantic import Field

from runtime.config._base import Section


class LexiconConfig(Section):
    # Terms every chat listens for (pinned at start), beside the persona's name and aliases.
    terms: tuple[str, ...] = ()
    half_life_ms: int = Field(default=7 * 24 * 3_600_000, ge=60_000)
    delete_below: float = Field(default=0.05, ge=0.0, lt=1.0)
    # Cap per scope+owner (a group, a thread, a game, ...); the global key has its own.
    max_terms_per_scope: int = Field(default=500, ge=1)
    max_terms_global: int = Field(default=20_000, ge=1)
    initial_weight: float = Field(default=0.2, gt=0.0, le=1.0)
    repeat_step: float = Field(default=0.1, ge=0.0, le=1.0)
    initial_confidence: float = Field(default=0.3, gt=0.0, le=1.0)
    confidence_step: float = Field(default=0.1, ge=0.0, le=1.0)
    # Learning runs off the per-message path, in batches; these caps keep a batch cheap.
    learn_max_chars: int = Field(default=2_000, ge=1)
    learn_max_texts: int = Field(default=1_000, ge=1)
    learn_max_new_per_text: int = Field(default=8, ge=0)
    learn_interval_ms: int = Field(default=60_000, ge=1_000)
    decay_interval_ms: int = Field(default=3_600_000, ge=1_000)
    max_term_chars: int = Field(default=16, ge=2, le=64)
    # Added to the built-in stop words (learning never proposes them).
    stop_words: tuple[str, ...] = ()
