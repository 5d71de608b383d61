"""ModelRouter: which provider serves a role, falling back along a chain (design/001 ③).

Roles are ``chat``, ``compression`` and ``embedding``. A role's chain is the configured providers
holding that role, in file order; for chat, those whose ``context_window`` reaches
``models.context_window_target`` (200k) come first. When no chat provider reaches it,
``needs_memory_compensation`` is true: the context layer keeps a sliding window of raw rounds and
relies on memory injection (design/001 ③.4) instead of a long history. Compression falls back to the
chat chain when no provider has the compression role; embedding does not (a chat model cannot embed).

A call walks the chain: a provider that fails (any :class:`LLMError`, after its own retries) or whose
window cannot hold the prompt is passed over, and :class:`FallbackExhaustedError` is raised when none
answered. Which provider and model served each call is logged (logger ``greywind.llm``) and counted
(``statistics()``); prompt usage calibrates the :class:`TokenEstimator`, and, given a ``chat_id``,
tokens go to the :class:`TokenLedger`. API keys are read from the environment variables the config
names, handed to the HTTP client, and never logged.

``GREYWIND_LLM_BASE_URL`` / ``GREYWIND_LLM_API_KEY`` / ``GREYWIND_LLM_MODEL``, when set, replace the
providers with one endpoint serving every role (:func:`apply_env_overrides`). With no usable provider
the router still builds: ``configured`` is false and ``problem`` says what to set.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from runtime.config.models import ROLES, ModelsConfig, ProviderConfig, Role
from runtime.config.schema import GreyWindConfig
from runtime.llm.client import ChatClient, RetryPolicy
from runtime.llm.errors import FallbackExhaustedError, LLMError, ModelUnavailableError, NotConfiguredError
from runtime.llm.tokens import EstimatorStatistics, TokenEstimator, TokenLedger
from runtime.llm.types import ChatResult, EmbeddingResult, Messages, Usage

__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ModelRouter",
    "RouterStatistics",
    "ServedCount",
    "apply_env_overrides",
]

log = structlog.get_logger("greywind.llm")

ENV_BASE_URL = "GREYWIND_LLM_BASE_URL"
ENV_API_KEY = "GREYWIND_LLM_API_KEY"
ENV_MODEL = "GREYWIND_LLM_MODEL"
ENV_PROVIDER_NAME = "env"

ClientFactory = Callable[[ProviderConfig, str | None], ChatClient]


def apply_env_overrides(config: ModelsConfig, env: Mapping[str, str]) -> ModelsConfig:
    """Point every role at the ``GREYWIND_LLM_*`` endpoint when any of those variables is set.

    A variable left unset is taken from the first configured chat provider (so setting only
    ``GREYWIND_LLM_MODEL`` swaps the model at the configured endpoint). Raises
    :class:`NotConfiguredError` naming the missing variable when no base URL or model can be found.
    """
    base_url = env.get(ENV_BASE_URL, "").strip()
    api_key = env.get(ENV_API_KEY, "").strip()
    model = env.get(ENV_MODEL, "").strip()
    if not (base_url or api_key or model):
        return config
    template = next((p for p in config.providers if "chat" in p.roles), None) or (
        config.providers[0] if config.providers else None
    )
    if not base_url and template is None:
        raise NotConfiguredError(f"{ENV_BASE_URL} is not set (and no provider in [models] gives a base_url)")
    if not model and template is None:
        raise NotConfiguredError(f"{ENV_MODEL} is not set (and no provider in [models] names a model)")
    use_model = model or (template.model if template else "")
    # The window is the configured one when the model is known; otherwise assume a modest one.
    known = next((p for p in config.providers if p.model == use_model), None)
    provider = ProviderConfig(
        name=ENV_PROVIDER_NAME,
        base_url=base_url or (template.base_url if template else ""),
        api_key_env=ENV_API_KEY if api_key else (template.api_key_env if template else ""),
        model=use_model,
        context_window=known.context_window if known else config.env_context_window,
        roles=ROLES,
        price_per_1k_input=known.price_per_1k_input if known else None,
        price_per_1k_output=known.price_per_1k_output if known else None,
        timeout_ms=template.timeout_ms if template else 60_000,
        max_retries=template.max_retries if template else 2,
    )
    return config.model_copy(update={"providers": (provider,)})


@dataclass(frozen=True, slots=True)
class ServedCount:
    role: str
    provider: str
    model: str
    calls: int
    failures: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None  # from the configured prices; None when the provider has none


@dataclass(frozen=True, slots=True)
class RouterStatistics:
    configured: bool
    needs_memory_compensation: bool
    calls: int
    failed_calls: int
    fallbacks: int  # calls served by a provider other than the first of their chain
    served: tuple[ServedCount, ...]
    estimator: EstimatorStatistics


@dataclass(slots=True)
class _Counter:
    calls: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ModelRouter:
    """Routes chat, compression and embedding calls across the configured providers."""

    def __init__(
        self,
        config: ModelsConfig,
        *,
        env: Mapping[str, str] | None = None,
        compression_model: str | None = None,
        estimator: TokenEstimator | None = None,
        ledger: TokenLedger | None = None,
        client_factory: ClientFactory | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._env = dict(os.environ if env is None else env)
        self.target = config.context_window_target
        self.compression_model = compression_model
        self.estimator = estimator or TokenEstimator()
        self.ledger = ledger or TokenLedger(
            daily_cap_per_chat=config.daily_token_cap_per_chat, utc_offset_hours=config.day_utc_offset_hours
        )
        self._retry = RetryPolicy(
            backoff_base=config.retry_backoff_ms / 1000,
            backoff_cap=config.retry_backoff_cap_ms / 1000,
            retry_after_cap=config.retry_after_cap_ms / 1000,
        )
        self._factory = client_factory or self._default_client
        self._wall = wall
        self._clients: dict[str, ChatClient] = {}
        self._counters: dict[tuple[str, str, str], _Counter] = {}
        self._prices: dict[str, tuple[float | None, float | None]] = {}
        self._calls = self._failed = self._fallbacks = 0

        problems: list[str] = []
        try:
            config = apply_env_overrides(config, self._env)
        except NotConfiguredError as exc:
            problems.append(str(exc))
            config = config.model_copy(update={"providers": ()})
        usable: list[ProviderConfig] = []
        for provider in config.providers:
            if provider.api_key_env and not self._env.get(provider.api_key_env):
                problems.append(
                    f"provider {provider.name!r}: environment variable {provider.api_key_env} is not set"
                )
                continue
            usable.append(provider)
            self._prices[provider.name] = (provider.price_per_1k_input, provider.price_per_1k_output)
        self.providers: tuple[ProviderConfig, ...] = tuple(usable)
        nothing_configured = not usable and not problems
        if nothing_configured:
            problems.append(
                "no model provider is configured: add [[models.providers]] to the config file "
                f"or set {ENV_BASE_URL}, {ENV_API_KEY} and {ENV_MODEL}"
            )
        elif not usable:
            problems.append(f"no usable model provider; set {ENV_BASE_URL}, {ENV_API_KEY} and {ENV_MODEL}")
        self.problem: str | None = "; ".join(problems) if problems else None
        self.configured = bool(usable)
        # No provider at all is the plain "no model" start, which whoever starts the bot reports once
        # (with what to set); a provider that is configured but unusable is worth its own warning.
        if self.problem and not nothing_configured:
            log.warning("llm.config_problem", problem=self.problem, usable=[p.name for p in usable])

    @classmethod
    def from_config(cls, config: GreyWindConfig, **options: Any) -> ModelRouter:
        """The router for a whole configuration: ``[models]`` plus ``memory_injection.compression_model``."""
        options.setdefault("compression_model", config.memory_injection.compression_model)
        return cls(config.models, **options)

    # -- routing -------------------------------------------------------------------------------------

    def chain(self, role: Role, prefer: str | None = None) -> tuple[ProviderConfig, ...]:
        """Providers to try for ``role``, in order; ``prefer`` (a provider name or model) goes first,
        whether or not it lists the role."""
        members = [p for p in self.providers if role in p.roles]
        if role == "chat":
            members.sort(key=lambda p: p.context_window < self.target)  # stable: file order within
        if role == "compression" and not members:
            members = list(self.chain("chat"))
        if prefer:
            # An explicit name (memory_injection.compression_model) beats the roles listed in the file.
            named = [p for p in self.providers if prefer in (p.name, p.model)]
            members = named + [p for p in members if p not in named]
        return tuple(members)

    @property
    def needs_memory_compensation(self) -> bool:
        """True when no chat provider's window reaches the target: use sliding window + memory injection."""
        return not any(p.context_window >= self.target for p in self.chain("chat"))

    def context_window(self, role: Role = "chat") -> int:
        """The window of the provider a call for ``role`` tries first (0 when there is none)."""
        members = self.chain(role)
        return members[0].context_window if members else 0

    # -- calls ---------------------------------------------------------------------------------------

    async def chat(
        self,
        messages: Messages,
        *,
        role: Role = "chat",
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        chat_id: str | None = None,
        prefer: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult:
        """A chat completion from the first provider of the role's chain that answers."""
        if role == "compression" and prefer is None:
            prefer = self.compression_model
        chain = self._chain_or_raise(role, prefer)
        raw = self.estimator.raw_messages(messages, tools)
        self._calls += 1
        failures: list[LLMError] = []
        for position, provider in enumerate(chain):
            estimate = self.estimator.estimate_messages(messages, tools, model=provider.model)
            if estimate + (max_tokens or 0) > provider.context_window:
                failures.append(
                    ModelUnavailableError(
                        f"prompt of ~{estimate} tokens does not fit a {provider.context_window}-token window",
                        provider=provider.name,
                        model=provider.model,
                    )
                )
                continue
            try:
                result = await self._client(provider).chat(
                    messages,
                    tools=tools,
                    tool_choice=tool_choice,
                    temperature=temperature,
                    max_tokens=max_tokens,
                )
            except LLMError as exc:
                self._fail(role, provider, exc, failures)
                continue
            usage = result.usage
            if usage is not None:
                self.estimator.observe(provider.model, raw, usage.prompt_tokens)
            else:
                # Some providers omit usage; the ledger and its cap still need a (high-side) count.
                spoken = result.text + "".join(call.name + call.raw for call in result.tool_calls)
                prompt = estimate
                completion = self.estimator.estimate_text(spoken, model=provider.model)
                usage = Usage(prompt, completion, prompt + completion)
            self._served(role, provider, usage, position, chat_id, result.attempts, result.latency)
            return result
        self._failed += 1
        raise FallbackExhaustedError(role, failures)

    async def embed(
        self, texts: Sequence[str], *, prefer: str | None = None, dimensions: int | None = None
    ) -> EmbeddingResult:
        chain = self._chain_or_raise("embedding", prefer)
        self._calls += 1
        failures: list[LLMError] = []
        for position, provider in enumerate(chain):
            try:
                result = await self._client(provider).embed(texts, dimensions=dimensions)
            except LLMError as exc:
                self._fail("embedding", provider, exc, failures)
                continue
            self._served("embedding", provider, result.usage, position, None, result.attempts, 0.0)
            return result
        self._failed += 1
        raise FallbackExhaustedError("embedding", failures)

    def open_clients(self) -> int:
        """Make every usable provider's client now (at start-up), not at its first call: a client's
        TLS context loads the system's CA bundle and its transport imports the HTTP stack, ~0.1 s of
        the event loop every chat shares. Returns how many clients exist."""
        for provider in self.providers:
            self._client(provider)
        return len(self._clients)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()

    def statistics(self) -> RouterStatistics:
        served = []
        for (role, name, model), counter in sorted(self._counters.items()):
            price_in, price_out = self._prices.get(name, (None, None))
            cost = None
            if price_in is not None or price_out is not None:
                cost = (
                    counter.prompt_tokens * (price_in or 0.0) + counter.completion_tokens * (price_out or 0.0)
                ) / 1000
            served.append(
                ServedCount(
                    role,
                    name,
                    model,
                    counter.calls,
                    counter.failures,
                    counter.prompt_tokens,
                    counter.completion_tokens,
                    cost,
                )
            )
        return RouterStatistics(
            configured=self.configured,
            needs_memory_compensation=self.needs_memory_compensation,
            calls=self._calls,
            failed_calls=self._failed,
            fallbacks=self._fallbacks,
            served=tuple(served),
            estimator=self.estimator.statistics(),
        )

    # -- internals -----------------------------------------------------------------------------------

    def _chain_or_raise(self, role: Role, prefer: str | None) -> tuple[ProviderConfig, ...]:
        chain = self.chain(role, prefer)
        if chain:
            return chain
        if not self.configured:
            raise NotConfiguredError(self.problem or "no model provider is configured")
        raise NotConfiguredError(
            f"no provider has the role {role!r}: add {role!r} to the roles of a [[models.providers]] entry"
        )

    def _default_client(self, provider: ProviderConfig, api_key: str | None) -> ChatClient:
        retry = RetryPolicy(
            max_retries=provider.max_retries,
            backoff_base=self._retry.backoff_base,
            backoff_cap=self._retry.backoff_cap,
            retry_after_cap=self._retry.retry_after_cap,
        )
        return ChatClient(
            base_url=provider.base_url,
            model=provider.model,
            api_key=api_key,
            provider=provider.name,
            timeout=provider.timeout_ms / 1000,
            retry=retry,
            keepalive=provider.keepalive_ms / 1000,
        )

    def _client(self, provider: ProviderConfig) -> ChatClient:
        client = self._clients.get(provider.name)
        if client is None:
            key = self._env.get(provider.api_key_env) if provider.api_key_env else None
            client = self._clients[provider.name] = self._factory(provider, key)
        return client

    def _counter(self, role: str, provider: ProviderConfig) -> _Counter:
        return self._counters.setdefault((role, provider.name, provider.model), _Counter())

    def _fail(self, role: str, provider: ProviderConfig, exc: LLMError, failures: list[LLMError]) -> None:
        failures.append(exc)
        self._counter(role, provider).failures += 1
        log.warning(
            "llm.provider_failed",
            role=role,
            provider=provider.name,
            model=provider.model,
            error=type(exc).__name__,
            status=exc.status,
            reason=str(exc),
        )

    def _served(
        self,
        role: str,
        provider: ProviderConfig,
        usage: Usage | None,
        position: int,
        chat_id: str | None,
        attempts: int,
        latency: float,
    ) -> None:
        counter = self._counter(role, provider)
        counter.calls += 1
        prompt = usage.prompt_tokens if usage is not None else 0
        completion = usage.completion_tokens if usage is not None else 0
        counter.prompt_tokens += prompt
        counter.completion_tokens += completion
        if position:
            self._fallbacks += 1
        if chat_id is not None and usage is not None:
            self.ledger.record(
                chat_id, self.ledger.day_of(self._wall()), prompt_tokens=prompt, completion_tokens=completion
            )
        log.info(
            "llm.call",
            role=role,
            provider=provider.name,
            model=provider.model,
            fallback=position,
            attempts=attempts,
            latency=round(latency, 3),
            prompt_tokens=prompt,
            completion_tokens=completion,
            chat_id=chat_id,
        )
