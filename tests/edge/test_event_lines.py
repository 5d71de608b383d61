"""NoneBot's line per event is not built when the log would drop it (plugins.greywind.event_lines)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from nonebot.adapters.onebot.v11 import Adapter
from nonebot.adapters.onebot.v11.event import Event
from nonebot.exception import NoLogException

from plugins.greywind.event_lines import skip_event_lines
from tests.support import onebot_events as ob


@pytest.fixture
def skipped() -> Iterator[None]:
    assert "get_log_string" not in Event.__dict__, "another test left the events patched"
    assert skip_event_lines()
    yield
    del Event.get_log_string


def test_events_build_their_line_as_nonebot_has_them() -> None:
    event = Adapter.json_to_event(ob.group_message(self_id=1, group_id=7, user_id=2, message="在吗"))
    assert event is not None
    assert "[message.group.normal]" in event.get_log_string()


@pytest.mark.usefixtures("skipped")
def test_skipped_events_have_no_line_and_keep_everything_else() -> None:
    message = Adapter.json_to_event(ob.group_message(self_id=1, group_id=7, user_id=2, message="在吗"))
    private = Adapter.json_to_event(ob.private_message(self_id=1, user_id=2, message="你好"))
    for event in (message, private):
        assert event is not None
        with pytest.raises(NoLogException):
            event.get_log_string()
    assert message is not None
    assert message.get_event_name() == "message.group.normal"
    assert message.get_plaintext() == "在吗"
    assert skip_event_lines() is False  # already done
