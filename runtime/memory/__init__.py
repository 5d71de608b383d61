"""The memory layer of design/001: the rolling summary (compress → inject → refresh), user profiles.

- :mod:`runtime.memory.summary`: the ``compressed.json`` schema, parsing a model's answer, trimming by
  priority;
- :mod:`runtime.memory.triggers`: when a compression is due (pure, over persisted counters);
- :mod:`runtime.memory.injector`: ``MemoryInjector`` — counts rounds on the reply path, compresses in
  the background through the router's compression role, stores and exports the summary, and serves
  layer 4 to the ContextBuilder (``summaries=``);
- :mod:`runtime.memory.profiles`: ``UserProfiles`` — layer 3 (``profiles=``), learned from messages and
  from each summary's ``user_preferences``;
- :mod:`runtime.memory.layers`: wiring both into the one Context Runtime, with the sliding window.

The five layers of design/001, all through ``runtime.context``'s PromptAssembler: identity and language
style (the persona slot), user profile, memory summary (≤ ``system_prompt_max_tokens``, trimmed by
``priority``), and the last ``sliding_window_rounds`` rounds raw (the session slot). Retrieval of raw
history stays on beside the summary: a rolling summary alone loses early facts.
"""

from runtime.memory.errors import CompressionFailedError, InvalidSummaryError, MemoryLayerError
from runtime.memory.injector import (
    CompressionOutcome,
    Compressor,
    InjectorStatistics,
    MemoryInjector,
    SummaryListener,
)
from runtime.memory.layers import MemoryLayer, five_layer_runtime, memory_layer
from runtime.memory.profiles import ProfileStatistics, UserProfiles
from runtime.memory.settings import InjectorSettings
from runtime.memory.summary import (
    CompressedSummary,
    EmotionalSignals,
    SummaryBody,
    UserPreferences,
    parse_summary_answer,
    trim_summary,
)
from runtime.memory.triggers import Counters, TriggerCheck, TriggerReason, TriggerSettings

__all__ = [
    "CompressedSummary",
    "CompressionFailedError",
    "CompressionOutcome",
    "Compressor",
    "Counters",
    "EmotionalSignals",
    "InjectorSettings",
    "InjectorStatistics",
    "InvalidSummaryError",
    "MemoryInjector",
    "MemoryLayer",
    "MemoryLayerError",
    "ProfileStatistics",
    "SummaryBody",
    "SummaryListener",
    "TriggerCheck",
    "TriggerReason",
    "TriggerSettings",
    "UserPreferences",
    "UserProfiles",
    "five_layer_runtime",
    "memory_layer",
    "parse_summary_answer",
    "trim_summary",
]
