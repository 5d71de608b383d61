"""Model access: an OpenAI-compatible client, the model router, and token accounting.

- :mod:`runtime.llm.client`: ``ChatClient`` for one endpoint (chat with tools, embeddings, retries);
- :mod:`runtime.llm.router`: ``ModelRouter`` over the ``[models]`` providers (roles, fallback,
  the 200k preference, ``GREYWIND_LLM_*`` overrides);
- :mod:`runtime.llm.tokens`: ``TokenEstimator`` (offline, calibrated) and ``TokenLedger`` (per chat
  and day, with a cap);
- :mod:`runtime.llm.types`: the frozen results; :mod:`runtime.llm.errors`: the exception tree.
"""

from runtime.llm.client import ChatClient, ClientStatistics, RetryPolicy
from runtime.llm.errors import (
    BadResponseError,
    FallbackExhaustedError,
    LLMError,
    LLMTimeoutError,
    ModelUnavailableError,
    NotConfiguredError,
    RateLimitedError,
    RequestRejectedError,
)
from runtime.llm.router import ModelRouter, RouterStatistics, ServedCount, apply_env_overrides
from runtime.llm.tokens import LedgerEntry, TokenEstimator, TokenLedger
from runtime.llm.types import ChatResult, EmbeddingResult, ToolCall, Usage

__all__ = [
    "BadResponseError",
    "ChatClient",
    "ChatResult",
    "ClientStatistics",
    "EmbeddingResult",
    "FallbackExhaustedError",
    "LLMError",
    "LLMTimeoutError",
    "LedgerEntry",
    "ModelRouter",
    "ModelUnavailableError",
    "NotConfiguredError",
    "RateLimitedError",
    "RequestRejectedError",
    "RetryPolicy",
    "RouterStatistics",
    "ServedCount",
    "TokenEstimator",
    "TokenLedger",
    "ToolCall",
    "Usage",
    "apply_env_overrides",
]
