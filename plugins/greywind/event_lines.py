"""NoneBot's log line per event, built only when it is written.

For every event it receives, NoneBot's ``handle_event`` builds a line ("OneBot V11 … |
[message.group.normal]: Message … from …@[群:…] '…'": the whole message rendered, tags escaped) and
logs it at SUCCESS, unless the event's ``get_log_string`` raises ``NoLogException`` (the OneBot
adapter's meta events do). :func:`runtime.logs.route_loguru` writes that line only at DEBUG, so at
every other level NoneBot built a line per message for nothing. At INFO, the default, loguru also made
a record of it, parsed its colour tags and handed it to the filter that dropped it: 69 µs for a short
message in ``bench/hot_path.py`` (5 µs not built), and the bot's CPU per message went from 2.70 to
2.47 ms in ``bench/side_by_side.py --log-level INFO``. At WARNING loguru drops the record at once.

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
