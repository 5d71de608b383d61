"""``[models]``: the OpenAI-compatible providers and how the router picks among them (design/001 ③).

::

    [models]
    context_window_target = 200000     # chat prefers providers whose window reaches this
    daily_token_cap_per_chat = 0       # 0: no cap; over it, no non-forced replies that day

    [[models.providers]]
    name = "main"
    base_url = "https://api.example.com/v1"
    api_key_env = "EXAMPLE_API_KEY"    # the NAME of the variable holding the key, never the key
    model = "example-chat-200k"
    context_window = 200000
    roles = ["chat", "compression"]

Providers are tried in file order within a role (chat: those reaching the target first). The
``GREYWIND_LLM_BASE_URL`` / ``_API_KEY`` / ``_MODEL`` variables replace all of this with one endpoint
for every role (:func:`runtime.llm.router.apply_env_overrides`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from runtime.config._base import Section

Role = Literal["chat", "compression", "embedding"]
ROLES: tuple[Role, ...] = ("chat", "compression", "embedding")


class ProviderConfig(Section):
    """One model at one OpenAI-compatible endpoint."""

    name: str = Field(min_length=1, max_length=64)
    base_url: str = Field(min_length=1)
    # The name of the environment variable holding the key; empty for endpoints without auth.
    api_key_env: str = ""
    model: str = Field(min_length=1)
    context_window: int = Field(default=32_768, ge=256)
    roles: tuple[Role, ...] = ("chat",)
    price_per_1k_input: float | None = Field(default=None, ge=0.0)
    price_per_1k_output: float | None = Field(default=None, ge=0.0)
    timeout_ms: int = Field(default=60_000, ge=1)
    max_retries: int = Field(default=2, ge=0, le=10)
    # How long an idle connection to the endpoint is kept for the next request (0: none is kept).
    # A conversation's next @ usually comes 10-60 s after the last answer: on a kept connection it
    # skips the TCP and TLS handshakes (two or three round trips to the provider, and a DNS lookup).
    keepalive_ms: int = Field(default=90_000, ge=0, le=3_600_000)

    @model_validator(mode="before")
    @classmethod
    def _hide_pasted_key(cls, data: Any) -> Any:
        # A key pasted into the file is refused as an unknown key; keep it out of the error message too.
        if isinstance(data, dict) and "api_key" in data:
            return {
                **data,
                "api_key": "<hidden: put the key in an environment variable named by api_key_env>",
            }
        return data

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("roles")
    @classmethod
    def _some_role(cls, value: tuple[Role, ...]) -> tuple[Role, ...]:
        if not value:
            raise ValueError("a provider needs at least one role (chat, compression, embedding)")
        return tuple(dict.fromkeys(value))


class ModelsConfig(Section):
    context_window_target: int = Field(default=200_000, ge=1)
    providers: tuple[ProviderConfig, ...] = ()
    # Tokens per chat per day; 0 means no cap. Over the cap only forced replies (@, reply, private) run.
    daily_token_cap_per_chat: int = Field(default=0, ge=0)
    # Where a "day" of the ledger starts: hours east of UTC (QQ groups mostly live at UTC+8).
    day_utc_offset_hours: float = Field(default=8.0, ge=-12.0, le=14.0)
    # Backoff between retries: base doubles per attempt, full jitter, never above the cap.
    retry_backoff_ms: int = Field(default=500, ge=0)
    retry_backoff_cap_ms: int = Field(default=8_000, ge=0)
    # A Retry-After header is honoured up to this long; a reply waiting longer is worth less than a fallback.
    retry_after_cap_ms: int = Field(default=20_000, ge=0)
    # Window assumed for an endpoint given only by GREYWIND_LLM_* (its real size is unknown).
    env_context_window: int = Field(default=32_768, ge=256)

    @model_validator(mode="after")
    def _unique_names(self) -> ModelsConfig:
        names = [provider.name for provider in self.providers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"provider names must be unique (repeated: {', '.join(duplicates)})")
        return self
