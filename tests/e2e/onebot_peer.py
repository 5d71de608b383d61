"""A test-side OneBot v11 implementation: it dials the bot's reverse WebSocket like NapCat or Lagrange.

::

    async with OneBotPeer(bot.ws_url, self_id=10000, access_token=None) as peer:
        await peer.post(onebot_events.group_message(...))
        call = await peer.wait_for_call("send_group_msg")
        assert call.text == "..."

It connects with ``X-Self-ID``, ``X-Client-Role: Universal`` (and ``Authorization: Bearer`` when a token
is given), posts a ``lifecycle.connect`` meta event, then posts whatever the test asks. Every API call the
bot makes is recorded as an :class:`ApiCall` and answered like an implementation would:

* ``send_group_msg`` / ``send_private_msg`` / ``send_msg`` -> a fresh ``message_id``; the sent message is
  remembered, so a later ``get_msg`` (the adapter calls it for reply segments) finds it, sender = the bot;
* ``get_msg`` -> a message the peer posted or the bot sent, else a failure (retcode 1404);
* ``get_login_info``, ``get_group_info``, ``get_group_member_info``, ``get_friend_list``,
  ``get_group_list``, ``get_status``, ``get_version_info`` -> plausible data;
* anything else -> ``status: failed``, retcode 1404 (unknown action).

``fail_next(action, times)`` makes the next calls of an action fail (retcode 1200, as a restricted
account's sends do, unless ``retcode`` says otherwise), to provoke retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.support import onebot_events as ob

__all__ = ["ApiCall", "OneBotPeer"]

SEND_ACTIONS = frozenset({"send_group_msg", "send_private_msg", "send_msg"})


@dataclass(frozen=True)
class ApiCall:
    action: str
    params: Mapping[str, Any]
    at: float  # time.monotonic() when it arrived
    answer: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The plain text of a send call's message (segments or a CQ string)."""
        message = self.params.get("message", "")
        if isinstance(message, str):
            return message
        return "".join(
            str(seg.get("data", {}).get("text", "")) for seg in message if seg.get("type") == "text"
        )

    @property
    def segments(self) -> list[Mapping[str, Any]]:
        message = self.params.get("message", [])
        return list(message) if isinstance(message, list) else []


class OneBotPeer:
    def __init__(
        self,
        url: str,
        *,
        self_id: int,
        access_token: str | None = None,
        nickname: str = "灰风",
        max_size: int | None = 64 * 1024 * 1024,
    ) -> None:
        self.url = url
        self.self_id = self_id
        self.nickname = nickname
        self._token = access_token
        self._max_size = max_size
        self.calls: list[ApiCall] = []
        self.messages: dict[int, dict[str, Any]] = {}  # message_id -> get_msg answer
        self._failures: dict[str, int] = {}
        self._failure_codes: dict[str, int] = {}
        self.answer_delay = 0.0  # seconds between recording a call and answering it
        self._answering: set[asyncio.Task[None]] = set()
        self._ids = itertools.count(900_000)
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._changed = asyncio.Condition()
        self.close_code: int | None = None
        self.close_reason: str = ""

    # -- connection -----------------------------------------------------------------------------

    async def __aenter__(self) -> OneBotPeer:
        headers = {"X-Self-ID": str(self.self_id), "X-Client-Role": "Universal"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        self._ws = await connect(
            self.url,
            additional_headers=headers,
            max_size=self._max_size,
            open_timeout=10,
            # A bot that stopped answering must not hold the test for websockets' default 10 s.
            close_timeout=2,
        )
        self._reader = asyncio.create_task(self._read(), name="onebot-peer-reader")
        await self.post(ob.lifecycle_connect(self_id=self.self_id))
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close()
        for answering in tuple(self._answering):
            answering.cancel()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader

    @property
    def extensions(self) -> list[str]:
        """The WebSocket extensions the bot accepted in the handshake (this peer offers
        permessage-deflate, as websockets' clients and most OneBot implementations do)."""
        assert self._ws is not None
        return [extension.name for extension in self._ws.protocol.extensions]

    @property
    def connected(self) -> bool:
        return (
            self._ws is not None
            and self.close_code is None
            and self._reader is not None
            and not self._reader.done()
        )

    async def wait_closed(self, within: float = 5.0) -> int | None:
        """Wait for the bot to close the connection; returns the close code."""
        assert self._reader is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._reader), within)
        return self.close_code

    # -- posting events -------------------------------------------------------------------------

    async def post(self, event: Mapping[str, Any]) -> None:
        """Post an event; messages are remembered so ``get_msg`` can answer for them."""
        if event.get("post_type") == "message" and isinstance(event.get("message_id"), int):
            self.messages[event["message_id"]] = {
                "time": event.get("time", int(time.time())),
                "message_type": event.get("message_type", "group"),
                "message_id": event["message_id"],
                "real_id": event["message_id"],
                "sender": dict(event.get("sender", {"user_id": event.get("user_id")})),
                "message": event.get("message", []),
            }
        await self.post_raw(json.dumps(event, ensure_ascii=False))

    async def say_in_group(self, group_id: int, user_id: int, *segments: ob.Segment | str, **kw: Any) -> int:
        """Post a group message (a str is a text segment); returns its message id."""
        message = [ob.text(seg) if isinstance(seg, str) else seg for seg in segments]
        event = ob.group_message(
            self_id=self.self_id, group_id=group_id, user_id=user_id, message=message, **kw
        )
        await self.post(event)
        return int(event["message_id"])

    async def say_in_private(self, user_id: int, *segments: ob.Segment | str, **kw: Any) -> int:
        """Post a private message (a str is a text segment); returns its message id."""
        message = [ob.text(seg) if isinstance(seg, str) else seg for seg in segments]
        event = ob.private_message(self_id=self.self_id, user_id=user_id, message=message, **kw)
        await self.post(event)
        return int(event["message_id"])

    async def post_raw(self, frame: str | bytes) -> None:
        """Send a frame as is (malformed input tests)."""
        assert self._ws is not None, "not connected"
        await self._ws.send(frame)

    # -- API calls ------------------------------------------------------------------------------

    def fail_next(self, action: str, times: int = 1, *, retcode: int = 1200) -> None:
        self._failures[action] = self._failures.get(action, 0) + times
        self._failure_codes[action] = retcode

    def stop_failing(self, action: str) -> None:
        self._failures.pop(action, None)

    def sends(self) -> list[ApiCall]:
        return [call for call in self.calls if call.action in SEND_ACTIONS]

    async def wait_for_call(
        self,
        action: str | None = None,
        predicate: Callable[[ApiCall], bool] | None = None,
        *,
        within: float = 10.0,
        after: int = 0,
    ) -> ApiCall:
        """The first recorded call (from index ``after``) matching ``action`` and ``predicate``."""

        def find() -> ApiCall | None:
            for call in self.calls[after:]:
                if (action is None or call.action == action) and (predicate is None or predicate(call)):
                    return call
            return None

        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(find), within)
        found = find()
        assert found is not None
        return found

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            async for frame in self._ws:
                try:
                    request = json.loads(frame)
                except ValueError:
                    continue
                if isinstance(request, dict) and "action" in request:
                    if self.answer_delay:  # calls made meanwhile are read, and answered as late
                        answering = asyncio.create_task(self._answer(request))
                        self._answering.add(answering)
                        answering.add_done_callback(self._answering.discard)
                    else:
                        await self._answer(request)
        except ConnectionClosed:
            pass
        finally:
            close = self._ws.close_code
            self.close_code = close if close is not None else 1006
            self.close_reason = self._ws.close_reason or ""
            async with self._changed:
                self._changed.notify_all()

    async def _answer(self, request: Mapping[str, Any]) -> None:
        action = str(request["action"])
        params = request.get("params") or {}
        answer = self._respond(action, params)
        answer = {**answer, "echo": request.get("echo")}
        async with self._changed:
            self.calls.append(ApiCall(action, params, time.monotonic(), answer))
            self._changed.notify_all()
        if self.answer_delay:  # a slow implementation: events the test posts meanwhile come first
            await asyncio.sleep(self.answer_delay)
        assert self._ws is not None
        with contextlib.suppress(ConnectionClosed):
            await self._ws.send(json.dumps(answer, ensure_ascii=False))

    def _respond(self, action: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if self._failures.get(action, 0) > 0:
            self._failures[action] -= 1
            retcode = self._failure_codes.get(action, 1200)
            return {"status": "failed", "retcode": retcode, "data": None, "message": "scripted failure"}
        if action in SEND_ACTIONS:
            message_id = next(self._ids)
            group = params.get("group_id")
            self.messages[message_id] = {
                "time": int(time.time()),
                "message_type": "group" if group else "private",
                "message_id": message_id,
                "real_id": message_id,
                "sender": {"user_id": self.self_id, "nickname": self.nickname},
                "message": params.get("message", []),
            }
            return _ok({"message_id": message_id})
        if action == "get_msg":
            found = self.messages.get(int(params.get("message_id", -1)))
            if found is None:
                return {"status": "failed", "retcode": 1404, "data": None, "message": "message not found"}
            return _ok(found)
        if action == "get_login_info":
            return _ok({"user_id": self.self_id, "nickname": self.nickname})
        if action == "get_group_info":
            group_id = params.get("group_id")
            return _ok(
                {
                    "group_id": group_id,
                    "group_name": f"群{group_id}",
                    "member_count": 42,
                    "max_member_count": 500,
                }
            )
        if action == "get_group_member_info":
            user_id = params.get("user_id")
            return _ok(
                {
                    "group_id": params.get("group_id"),
                    "user_id": user_id,
                    "nickname": f"user{user_id}",
                    "role": "member",
                }
            )
        if action in {"get_friend_list", "get_group_list"}:
            return _ok([])
        if action == "get_status":
            return _ok({"online": True, "good": True})
        if action == "get_version_info":
            return _ok({"app_name": "onebot-peer", "app_version": "0", "protocol_version": "v11"})
        return {"status": "failed", "retcode": 1404, "data": None, "message": f"unknown action {action}"}


def _ok(data: Any) -> dict[str, Any]:
    return {"status": "ok", "retcode": 0, "data": data}
