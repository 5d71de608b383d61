"""Lexicon settings in kernel units (seconds), built from the ``[lexicon]`` config section."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from runtime.kernel.errors import InvalidSetting

if TYPE_CHECKING:
    from runtime.config.lexicon import LexiconConfig

_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class LexiconSettings:
    """How terms are learned, decay and are capped (design/0002 §7 gives the defaults)."""

    half_life: float = 7 * _DAY
    delete_below: float = 0.05
    max_terms: int = 500  # per key, except the global key
    max_terms_global: int = 20_000
    initial_weight: float = 0.2
    repeat_step: float = 0.1
    initial_confidence: float = 0.3
    confidence_step: float = 0.1
    learn_max_chars: int = 2_000  # learning reads at most this much of one text
    learn_max_texts: int = 1_000  # per batch; the rest are skipped and counted
    learn_max_new_per_text: int = 8
    max_term_chars: int = 16  # longer segments are not learned
    stop_words: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        checks: tuple[tuple[str, bool, str], ...] = (
            ("lexicon.half_life_ms", self.half_life > 0, "must be positive"),
            ("lexicon.delete_below", 0.0 <= self.delete_below < 1.0, "must be in [0, 1)"),
            ("lexicon.max_terms_per_scope", self.max_terms >= 1, "must be at least 1"),
            ("lexicon.max_terms_global", self.max_terms_global >= 1, "must be at least 1"),
            ("lexicon.initial_weight", 0.0 < self.initial_weight <= 1.0, "must be in (0, 1]"),
            ("lexicon.repeat_step", 0.0 <= self.repeat_step <= 1.0, "must be in [0, 1]"),
            ("lexicon.initial_confidence", 0.0 < self.initial_confidence <= 1.0, "must be in (0, 1]"),
            ("lexicon.confidence_step", 0.0 <= self.confidence_step <= 1.0, "must be in [0, 1]"),
            ("lexicon.learn_max_chars", self.learn_max_chars >= 1, "must be at least 1"),
            ("lexicon.learn_max_texts", self.learn_max_texts >= 1, "must be at least 1"),
            ("lexicon.learn_max_new_per_text", self.learn_max_new_per_text >= 0, "must not be negative"),
            ("lexicon.max_term_chars", 2 <= self.max_term_chars <= 64, "must be in [2, 64]"),
        )
        for key, ok, problem in checks:
            if not ok:
                raise InvalidSetting(key, problem)

    @classmethod
    def from_config(cls, config: LexiconConfig) -> LexiconSettings:
        """Convert the config section (milliseconds) to kernel settings (seconds)."""
        return cls(
            half_life=config.half_life_ms / 1000.0,
            delete_below=config.delete_below,
            max_terms=config.max_terms_per_scope,
            max_terms_global=config.max_terms_global,
            initial_weight=config.initial_weight,
            repeat_step=config.repeat_step,
            initial_confidence=config.initial_confidence,
            confidence_step=config.confidence_step,
            learn_max_chars=config.learn_max_chars,
            learn_max_texts=config.learn_max_texts,
            learn_max_new_per_text=config.learn_max_new_per_text,
            max_term_chars=config.max_term_chars,
            stop_words=frozenset(config.stop_words),
        )
