"""Faults of model access: an answer is a value (``ChatResult``); a provider that cannot answer raises.

::

    LLMError                         base of everything runtime.llm raises on purpose
    ├── NotConfiguredError           no provider serves the role; the message names what to set
    ├── RequestRejectedError         a 4xx other than 408/429 (bad key, unknown model, request too
    │                                large); not retried, since the same request fails the same way
    ├── BadResponseError             a 2xx whose body is not JSON or not the expected shape; not
    │                                retried on the same provider (a proxy's HTML page stays one)
    └── ModelUnavailableError        the provider could not answer within its retries: connection
        │                            failure, 408, 5xx
        ├── RateLimitedError         429 on the last attempt; ``retry_after`` in seconds if given
        ├── LLMTimeoutError          the request timed out on the last attempt
        └── FallbackExhaustedError   the router tried every provider of a role; ``failures`` holds
                                     each provider's error, in order

Every error carries ``provider`` and ``model`` (and ``status`` when an HTTP status was seen), never
an API key.
"""

from __future__ import annotations

from collections.abc import Sequence


class LLMError(Exception):
    """Base class of model-access faults."""

    def __init__(
        self, message: str, *, provider: str = "", model: str = "", status: int | None = None
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.status = status


class NotConfiguredError(LLMError):
    """Raised when no provider is configured for the requested role."""


class RequestRejectedError(LLMError):
    """Raised on a client error (4xx other than 408 and 429): retrying would not help."""


class BadResponseError(LLMError):
    """Raised when a successful status carries a body that is not a valid answer."""


class ModelUnavailableError(LLMError):
    """Raised when the provider did not answer within its retries (connection, 408, 5xx)."""


class RateLimitedError(ModelUnavailableError):
    """Raised when the provider still answered 429 on the last attempt."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        model: str = "",
        status: int | None = 429,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, model=model, status=status)
        self.retry_after = retry_after


class LLMTimeoutError(ModelUnavailableError):
    """Raised when the last attempt timed out."""


class FallbackExhaustedError(ModelUnavailableError):
    """Raised by the router when every provider of a role failed; ``failures`` in the order tried."""

    def __init__(self, role: str, failures: Sequence[LLMError]) -> None:
        parts = "; ".join(f"{f.provider or '?'}: {f}" for f in failures) or "no provider tried"
        last = failures[-1] if failures else None
        super().__init__(
            f"every provider for {role} failed ({parts})",
            provider=last.provider if last else "",
            model=last.model if last else "",
            status=last.status if last else None,
        )
        self.role = role
        self.failures = tuple(failures)
