"""An async client for one OpenAI-compatible endpoint: chat completions with tools, and embeddings.

``ChatClient`` sends ``POST {base_url}/chat/completions`` and ``POST {base_url}/embeddings`` over
httpx, retries what may succeed on a second try (429, 408, 5xx, timeouts, connection failures) with
exponential backoff and jitter, honours ``Retry-After`` (seconds or an HTTP date, and OpenAI's
``retry-after-ms``) up to a cap, and returns frozen values (:mod:`runtime.llm.types`). Faults are the
exceptions of :mod:`runtime.llm.errors`. The API key goes into the ``Authorization`` header and
nowhere else: not into logs, errors or statistics.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import anyio
import httpx
import structlog
from pydantic import BaseModel, ValidationError

from runtime import stages
from runtime.llm.errors import (
    BadResponseError,
    LLMError,
    LLMTimeoutError,
    ModelUnavailableError,
    RateLimitedError,
    RequestRejectedError,
)
from runtime.llm.types import (
    ChatResult,
    EmbeddingResult,
    Messages,
    WireChatCompletion,
    WireEmbeddings,
    chat_result_from_wire,
    embedding_result_from_wire,
)

__all__ = ["ChatClient", "ClientStatistics", "RetryPolicy", "parse_retry_after"]

log = structlog.get_logger("greywind.llm")

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retries after the first attempt; delays in seconds."""

    max_retries: int = 2
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
    retry_after_cap: float = 20.0

    def backoff(self, attempt: int, rng: Callable[[], float]) -> float:
        """Equal jitter: half the exponential step for sure, the other half random (never ~0)."""
        step = min(self.backoff_cap, self.backoff_base * (2.0**attempt))
        return step / 2 + rng() * step / 2


@dataclass(frozen=True, slots=True)
class ClientStatistics:
    provider: str
    model: str
    calls: int
    succeeded: int
    failed: int
    http_requests: int
    retries: int
    waited_seconds: float


def parse_retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds the server asks us to wait, from ``retry-after-ms`` or ``Retry-After``; ``None`` if absent."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


# A connection that had been fine failing as the request went out or before any answer: most often a
# kept connection the server or a middlebox closed while it was idle. A new connection is the cure.
_DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class _RetryableError(Exception):
    """Internal: this attempt failed in a way worth another try (``dropped``: see ``_DROPPED``)."""

    def __init__(self, error: LLMError, wait: float | None, *, dropped: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait = wait
        self.dropped = dropped


class ChatClient:
    """One provider's endpoint and model. Share one instance per provider; close it with ``aclose``."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        provider: str = "default",
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        keepalive: float = 90.0,
        http: httpx.AsyncClient | None = None,
        sleep: Sleep | None = None,
        rng: Callable[[], float] = random.random,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.provider = provider
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._api_key = api_key or None
        # A proxy from the environment must not capture a loopback endpoint (a local model, the tests).
        loopback = httpx.URL(self.base_url).host in ("127.0.0.1", "localhost", "::1")
        # An idle connection is kept ``keepalive`` seconds (httpx's own default is 5 s: a quiet bot
        # would pay a new TCP and TLS handshake for nearly every @).
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=keepalive)
        self._http = http or httpx.AsyncClient(trust_env=not loopback, limits=limits)
        self._owns_http = http is None
        self._sleep: Sleep = sleep or anyio.sleep
        self._rng = rng
        self._wall = wall
        self._calls = self._succeeded = self._failed = self._requests = self._retries = 0
        self._waited = 0.0

    def __repr__(self) -> str:  # no key, ever
        return f"ChatClient(provider={self.provider!r}, model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def statistics(self) -> ClientStatistics:
        return ClientStatistics(
            provider=self.provider,
            model=self.model,
            calls=self._calls,
            succeeded=self._succeeded,
            failed=self._failed,
            http_requests=self._requests,
            retries=self._retries,
            waited_seconds=self._waited,
        )

    # -- public calls -----------------------------------------------------------------------------

    async def chat(
        self,
        messages: Messages,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> ChatResult:
        """One chat completion. ``tools`` are OpenAI function schemas; ``tool_choice`` as the API takes it."""
        use_model = model or self.model
        payload: dict[str, Any] = {"model": use_model, "messages": [dict(m) for m in messages]}
        if tools:
            payload["tools"] = [dict(t) for t in tools]
            if tool_choice is not None:
                payload["tool_choice"] = tool_choice if isinstance(tool_choice, str) else dict(tool_choice)
        if temperature is not None:
            payload["temperature"] = temperature
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        if extra_body:
            payload.update(extra_body)
        started = time.monotonic()
        stages.stamp_current("model.post")
        wire, attempts = await self._post("/chat/completions", payload, WireChatCompletion, use_model)
        assert isinstance(wire, WireChatCompletion)
        return chat_result_from_wire(
            wire,
            provider=self.provider,
            model=use_model,
            attempts=attempts,
            latency=time.monotonic() - started,
        )

    async def embed(
        self, texts: Sequence[str], *, model: str | None = None, dimensions: int | None = None
    ) -> EmbeddingResult:
        """Embeddings for ``texts``, in the same order."""
        use_model = model or self.model
        payload: dict[str, Any] = {"model": use_model, "input": list(texts)}
        if dimensions is not None:
            payload["dimensions"] = dimensions

        def one_per_text(wire: BaseModel) -> str | None:
            assert isinstance(wire, WireEmbeddings)
            got = len(wire.data)
            return None if got == len(texts) else f"expected {len(texts)} embeddings, got {got}"

        wire, attempts = await self._post("/embeddings", payload, WireEmbeddings, use_model, one_per_text)
        assert isinstance(wire, WireEmbeddings)
        result = embedding_result_from_wire(
            wire, provider=self.provider, model=use_model, expected=len(texts), attempts=attempts
        )
        assert result is not None  # one_per_text checked the count
        return result

    # -- the request loop ---------------------------------------------------------------------------

    async def _post(
        self,
        path: str,
        payload: dict[str, Any],
        schema: type[BaseModel],
        model: str,
        check: Callable[[BaseModel], str | None] | None = None,
    ) -> tuple[BaseModel, int]:
        self._calls += 1
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        attempts = 1 + self.retry.max_retries
        redialled = False  # the first dropped connection of a call is retried at once
        for attempt in range(attempts):
            try:
                wire = await self._attempt(path, payload, headers, schema, model)
                problem = check(wire) if check else None
                if problem:
                    raise BadResponseError(problem, provider=self.provider, model=model)
            except _RetryableError as retry:
                if attempt + 1 >= attempts:
                    self._failed += 1
                    raise retry.error from None
                if retry.dropped and not redialled:
                    redialled, wait = True, 0.0
                else:
                    wait = self._wait_for(retry.wait, attempt)
                self._retries += 1
                self._waited += wait
                log.info(
                    "llm.retry",
                    provider=self.provider,
                    model=model,
                    attempt=attempt + 1,
                    wait=round(wait, 3),
                    reason=str(retry.error),
                )
                if wait > 0.0:
                    await self._sleep(wait)
            except LLMError:
                self._failed += 1
                raise
            else:
                self._succeeded += 1
                return wire, attempt + 1
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _wait_for(self, asked: float | None, attempt: int) -> float:
        if asked is not None:
            return min(asked, self.retry.retry_after_cap)
        return self.retry.backoff(attempt, self._rng)

    async def _attempt(
        self, path: str, payload: dict[str, Any], headers: dict[str, str], schema: type[BaseModel], model: str
    ) -> BaseModel:
        self._requests += 1
        try:
            response = await self._http.post(
                self.base_url + path,
                json=payload,
                headers=headers,
                timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
            )
        except httpx.TimeoutException:
            raise _RetryableError(
                LLMTimeoutError(f"no answer within {self.timeout:g}s", provider=self.provider, model=model),
                None,
            ) from None
        except httpx.TransportError as exc:
            reason = f"connection failed: {type(exc).__name__}: {self._redact(str(exc))}"
            raise _RetryableError(
                ModelUnavailableError(reason, provider=self.provider, model=model),
                None,
                dropped=isinstance(exc, _DROPPED),
            ) from None
        status = response.status_code
        if status == 429:
            after = parse_retry_after(response.headers, self._wall())
            message = f"rate limited (429): {self._error_text(response)}"
            raise _RetryableError(
                RateLimitedError(message, retry_after=after, provider=self.provider, model=model), after
            )
        if status == 408 or status >= 500:
            after = parse_retry_after(response.headers, self._wall())
            message = f"server error ({status}): {self._error_text(response)}"
            raise _RetryableError(
                ModelUnavailableError(message, status=status, provider=self.provider, model=model), after
            )
        if status >= 400:
            message = f"request rejected ({status}): {self._error_text(response)}"
            raise RequestRejectedError(message, status=status, provider=self.provider, model=model)
        try:
            body = response.json()
        except ValueError:
            snippet = self._redact(response.text[:200])
            raise BadResponseError(
                f"answer is not JSON: {snippet!r}", status=status, provider=self.provider, model=model
            ) from None
        if isinstance(body, dict) and "error" in body and "choices" not in body and "data" not in body:
            raise BadResponseError(
                f"error inside a {status} answer: {self._error_text(response)}",
                provider=self.provider,
                model=model,
            )
        try:
            return schema.model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(top)"
            raise BadResponseError(
                f"answer has the wrong shape at {where}: {first['msg']}", provider=self.provider, model=model
            ) from None

    def _error_text(self, response: httpx.Response) -> str:
        try:
            body = response.json()
        except ValueError:
            return self._redact(response.text[:200])
        if isinstance(body, dict):
            error = body.get("error")
            if isinstance(error, dict) and error.get("message"):
                return self._redact(str(error["message"])[:300])
            if isinstance(error, str):
                return self._redact(error[:300])
        return self._redact(response.text[:200])

    def _redact(self, text: str) -> str:
        # Some gateways echo the Authorization header back in their error pages.
        if self._api_key and self._api_key in text:
            return text.replace(self._api_key, "***")
        return text
