"""``[bots]``: other bots in the chats, and how long the bot goes on answering them.

A sender is a bot when its id is in ``ids`` (or the running bot knows it is one: its own other
accounts), or when it behaves like one: ``detect_runs`` messages in a row, each within
``detect_latency_ms`` after someone else's message. Once ``max_turns`` bot messages came in a chat
with no person speaking between them, the bot only records the next ones until a person speaks.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from runtime.config._base import Section


class BotsConfig(Section):
    # User ids of other bots, e.g. [2854196310]; the bot's own accounts are known without listing them.
    ids: tuple[str, ...] = ()
    # Bot messages in a row (no person between) the bot still answers; 0: it never answers a bot.
    max_turns: int = Field(default=2, ge=0)
    # Fast answers in a row that make a sender a bot (and slow ones that undo it); 0: no detection.
    detect_runs: int = Field(default=6, ge=0)
    # An answer this soon after someone else's message is a fast one.
    detect_latency_ms: int = Field(default=1_000, ge=0, le=60_000)

    @field_validator("ids", mode="before")
    @classmethod
    def _ids(cls, values: object) -> tuple[str, ...]:
        if not isinstance(values, list | tuple):
            raise ValueError("a list of user ids, like [2854196310]")
        ids: list[str] = []
        for value in values:
            text = str(value).strip()
            if isinstance(value, bool) or not isinstance(value, int | str) or not text.isdigit():
                raise ValueError(f"a bot is its user id, like 2854196310 (got {value!r})")
            ids.append(text)
        return tuple(dict.fromkeys(ids))
