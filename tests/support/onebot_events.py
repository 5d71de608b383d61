"""OneBot v11 event JSON, as an implementation (NapCat, Lagrange, go-cqhttp) posts it.

Used by the edge's unit tests (parsed with the real adapter's ``Adapter.json_to_event``) and by the
end-to-end peer (sent over the WebSocket). Segments are plain dicts: ``text("hi")``, ``at(42)``, ...
"""

from __future__ import annotations

import itertools
import time
from typing import Any

Segment = dict[str, Any]

_ids = itertools.count(1_000)


def next_message_id() -> int:
    return next(_ids)


def text(value: str) -> Segment:
    return {"type": "text", "data": {"text": value}}


def at(qq: int | str) -> Segment:
    return {"type": "at", "data": {"qq": str(qq)}}


def reply(message_id: int | str) -> Segment:
    return {"type": "reply", "data": {"id": str(message_id)}}


def image(file: str = "abc.jpg") -> Segment:
    return {"type": "image", "data": {"file": file, "url": f"https://example.invalid/{file}"}}


def segment(kind: str, **data: Any) -> Segment:
    return {"type": kind, "data": data}


def _raw(message: list[Segment]) -> str:
    parts = []
    for seg in message:
        if seg["type"] == "text":
            parts.append(str(seg["data"].get("text", "")))
        else:
            params = ",".join(f"{k}={v}" for k, v in seg["data"].items())
            parts.append(f"[CQ:{seg['type']}{',' if params else ''}{params}]")
    return "".join(parts)


def group_message(
    *,
    self_id: int,
    group_id: int,
    user_id: int,
    message: list[Segment] | str,
    message_id: int | None = None,
    nickname: str = "",
    card: str = "",
    when: int | None = None,
) -> dict[str, Any]:
    return {
        "time": int(when if when is not None else time.time()),
        "self_id": self_id,
        "post_type": "message",
        "message_type": "group",
        "sub_type": "normal",
        "message_id": message_id if message_id is not None else next_message_id(),
        "group_id": group_id,
        "user_id": user_id,
        "anonymous": None,
        "message": message,
        "raw_message": message if isinstance(message, str) else _raw(message),
        "font": 0,
        "sender": {
            "user_id": user_id,
            "nickname": nickname or f"user{user_id}",
            "card": card,
            "role": "member",
        },
    }


def private_message(
    *,
    self_id: int,
    user_id: int,
    message: list[Segment] | str,
    message_id: int | None = None,
    nickname: str = "",
    when: int | None = None,
) -> dict[str, Any]:
    return {
        "time": int(when if when is not None else time.time()),
        "self_id": self_id,
        "post_type": "message",
        "message_type": "private",
        "sub_type": "friend",
        "message_id": message_id if message_id is not None else next_message_id(),
        "user_id": user_id,
        "message": message,
        "raw_message": message if isinstance(message, str) else _raw(message),
        "font": 0,
        "sender": {"user_id": user_id, "nickname": nickname or f"user{user_id}"},
    }


def notice(notice_type: str, *, self_id: int, **fields: Any) -> dict[str, Any]:
    return {
        "time": int(time.time()),
        "self_id": self_id,
        "post_type": "notice",
        "notice_type": notice_type,
        **fields,
    }


def group_recall(
    *, self_id: int, group_id: int, user_id: int, message_id: int, operator_id: int | None = None
) -> dict[str, Any]:
    return notice(
        "group_recall",
        self_id=self_id,
        group_id=group_id,
        user_id=user_id,
        operator_id=operator_id if operator_id is not None else user_id,
        message_id=message_id,
    )


def group_ban(
    *, self_id: int, group_id: int, user_id: int, duration: int, operator_id: int = 1, lift: bool = False
) -> dict[str, Any]:
    return notice(
        "group_ban",
        self_id=self_id,
        sub_type="lift_ban" if lift else "ban",
        group_id=group_id,
        user_id=user_id,
        operator_id=operator_id,
        duration=0 if lift else duration,
    )


def poke(*, self_id: int, user_id: int, target_id: int, group_id: int | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {"sub_type": "poke", "user_id": user_id, "target_id": target_id}
    if group_id is not None:
        fields["group_id"] = group_id
    return notice("notify", self_id=self_id, **fields)


def lifecycle_connect(*, self_id: int) -> dict[str, Any]:
    return {
        "time": int(time.time()),
        "self_id": self_id,
        "post_type": "meta_event",
        "meta_event_type": "lifecycle",
        "sub_type": "connect",
    }


def get_msg_result(
    *,
    message_id: int,
    sender_id: int,
    message: list[Segment],
    message_type: str = "group",
    when: int | None = None,
) -> dict[str, Any]:
    """What ``get_msg`` answers, for reply segments (the adapter calls it before matchers run)."""
    return {
        "time": int(when if when is not None else time.time()),
        "message_type": message_type,
        "message_id": message_id,
        "real_id": message_id,
        "sender": {"user_id": sender_id, "nickname": f"user{sender_id}"},
        "message": message,
    }
