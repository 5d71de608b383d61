"""NoneBot's validation with one pydantic adapter per type: the same events, without a schema per call."""

from __future__ import annotations

from typing import Annotated, Any

import nonebot.compat
import nonebot.internal.adapter.message
from nonebot.adapters.onebot.v11 import Adapter, GroupMessageEvent, MessageSegment
from pydantic import TypeAdapter

from plugins.greywind import validation_cache
from tests.support import onebot_events as ob


def test_nonebot_modules_validate_through_the_kept_adapters() -> None:
    validation_cache.install()
    assert nonebot.compat.type_validate_python is validation_cache.type_validate_python
    assert nonebot.internal.adapter.message.type_validate_python is validation_cache.type_validate_python
    assert validation_cache.install() == 0  # nothing left to replace


def test_an_event_reads_as_it_did_and_its_adapters_are_built_once() -> None:
    validation_cache.install()
    payload: dict[str, Any] = ob.group_message(
        self_id=10_000,
        group_id=700_001,
        user_id=42,
        message=[ob.at(10_000), ob.text(" 看看这个"), {"type": "face", "data": {"id": "14"}}],
    )
    event = Adapter.json_to_event(dict(payload))
    assert isinstance(event, GroupMessageEvent)
    expected = TypeAdapter(GroupMessageEvent).validate_python(dict(payload))
    assert event == expected
    assert event.get_message() == expected.get_message()
    assert [seg.type for seg in event.original_message] == ["at", "text", "face"]
    kept = dict(validation_cache._adapters)
    again = Adapter.json_to_event(dict(payload))
    assert again == event
    assert validation_cache._adapters == kept  # no new adapter for the same types
    assert validation_cache._adapter(MessageSegment) is validation_cache._adapter(MessageSegment)


def test_an_unhashable_type_is_validated_without_being_kept() -> None:
    unhashable = Annotated[int, {"note": "a dict is not hashable"}]
    before = len(validation_cache._adapters)
    assert validation_cache.type_validate_python(unhashable, "12") == 12
    assert validation_cache.type_validate_json(unhashable, "13") == 13
    assert len(validation_cache._adapters) == before
