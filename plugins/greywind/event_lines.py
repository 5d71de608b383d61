"""NoneBot's log line per event, built only when it is written.

For every event it receives, NoneBot's ``handle_event`` builds a line ("OneBot V11 … |
[message.group.normal]: Message … from …@[群:…] '…'": the whole message rendered, tags escaped) and
logs it at SUCCESS, unless the event's ``get_log_string`` raises ``NoLogException`` (the OneBot
adapter's meta events do). :func:`runtime.logs.route_loguru` writes that line only at DEBUG, so at
every other level NoneBot built a line per message for nothing: about 26 µs at WARNING, where loguru
drops the record at once, and 200 µs at INFO, the default, where loguru makes a record, parses the
line's colour tags and hands it to the filter that drops it. That was a tenth of the bot's whole cost
per message.

:func:`skip_event_lines` has the OneBot v11 events say they have no line, as the meta events do;
``bot.py`` calls it unless the level is DEBUG. The events are otherwise untouched.
"""

from __future__ import annotations

from typing import NoReturn

from nonebot.adapters.onebot.v11.event import Event
from nonebot.adapters.onebot.v11.exception import NoLogException

__all__ = ["skip_event_lines"]


def _no_line(self: Event) -> NoReturn:
    raise NoLogException


def skip_event_lines() -> bool:
    """Make every OneBot v11 event skip NoneBot's line (those that already do are left as they
    are); whether anything changed (not when already done)."""
    if Event.__dict__.get("get_log_string") is _no_line:
        return False
    Event.get_log_string = _no_line  # type: ignore[method-assign,assignment]
    return True
