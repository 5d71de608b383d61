"""Build adapter event models from OneBot JSON and run the adapter's own pre-processing on them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
from nonebot.adapters.onebot.v11 import Adapter, Event, MessageEvent
from nonebot.adapters.onebot.v11.bot import _check_at_me, _check_reply

SELF_ID = 10_000
GROUP = 555_001


def parse(payload: Mapping[str, Any]) -> Event:
    event = Adapter.json_to_event(dict(payload))
    assert event is not None, "the adapter refused the payload"
    return event


class _GetMsgBot:
    """Answers the adapter's ``get_msg`` from a table, or fails like an implementation that lost it."""

    def __init__(self, messages: Mapping[int, Mapping[str, Any]]) -> None:
        self._messages = messages

    async def get_msg(self, *, message_id: int) -> Mapping[str, Any]:
        if message_id not in self._messages:
            raise RuntimeError("message not found")
        return self._messages[message_id]


async def as_adapter_delivers(
    payload: Mapping[str, Any], get_msg: Mapping[int, Mapping[str, Any]] | None = None
) -> MessageEvent:
    """The event as matchers receive it: parsed, reduced, reply resolved through get_msg, @-bot checked."""
    event = parse(payload)
    assert isinstance(event, MessageEvent)
    event.message.reduce()
    await _check_reply(_GetMsgBot(get_msg or {}), event)  # type: ignore[arg-type]
    _check_at_me(None, event)  # type: ignore[arg-type]
    return event


class FakeTime:
    """A clock whose sleep just moves it; many tasks can sleep at once and wake in order."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        # Each sleeper wakes at its own deadline; the clock only moves forward. Waiters are woken in
        # the order they slept, which is the order the bucket reserved their slots.
        target = self.now + max(seconds, 0.0)
        await anyio.lowlevel.checkpoint()
        self.now = max(self.now, target)


class FakeBot:
    """Records API calls; ``fail`` makes the next N calls raise like a OneBot ActionFailed; each call
    takes ``latency`` seconds of the fake clock to be answered."""

    def __init__(self, time: FakeTime | None = None, *, latency: float = 0.0) -> None:
        self.calls: list[tuple[str, dict[str, Any], float]] = []
        self.fail = 0
        self._time = time
        self._latency = latency
        self._next_id = 5_000

    async def call_api(self, api: str, **data: Any) -> Any:
        self.calls.append((api, data, self._time() if self._time else 0.0))
        if self._latency and self._time is not None:
            await self._time.sleep(self._latency)
        if self.fail:
            self.fail -= 1
            raise RuntimeError("ActionFailed(retcode=1200)")
        self._next_id += 1
        return {"message_id": self._next_id}

    def texts(self) -> list[str]:
        return [
            "".join(seg["data"]["text"] for seg in data["message"] if seg["type"] == "text")
            for _, data, _ in self.calls
        ]
