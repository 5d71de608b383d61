"""The per-message costs the process pays outside the kernel, each beside what it cost before, in one run.

CPU time (``time.process_time``) per operation, best of three rounds; on a loaded machine read the
ratios. Each line is one of the changes that took time off the hot path:

- **NoneBot's event validation**: ``Adapter.json_to_event`` of a group message as NoneBot does it
  (a new pydantic ``TypeAdapter`` per event and per segment) and with one adapter kept per type
  (``plugins/greywind/validation_cache.py``);
- **NoneBot's line per event** at ``LOG_LEVEL=INFO``: rendered through structlog (as at DEBUG),
  dropped in loguru's filter (``runtime/logs.py``), and not built at all (the events skip it,
  ``plugins/greywind/event_lines.py``). Each is what NoneBot's ``handle_event`` does for the line:
  the prefix, ``get_log_string()`` and the ``success`` call;
- **where the edge hears events**: NoneBot's ``handle_event`` of a group message with a hook that
  does nothing registered as an event preprocessor (as the edge heard events before), and the same
  hook awaited in front of it (``plugins/greywind/hearing.py``), with no preprocessor registered;
- **a tool's argument schema** per model request: pydantic's ``model_json_schema()`` each time, and
  the kept JSON (``runtime/tools/spec.py``);
- **a packet's token estimate**: every text counted each time, and long texts' counts kept
  (``runtime/llm/tokens.py``);
- **a full garbage collection** of this process (NoneBot, the runtime and 20,000 small objects
  imported and built), before and after start-up is frozen (``plugins/greywind/looplag.py``).

    .venv/bin/python bench/hot_path.py
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def per_call_us(work: Callable[[], object], calls: int) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        for _ in range(calls):
            work()
        best = min(best, time.process_time() - started)
    return best / calls * 1e6


async def hearing(event: Any) -> tuple[float, float]:
    """NoneBot's handle_event with a hook as an event preprocessor, and with the hook in front."""
    import nonebot
    import nonebot.message
    from nonebot.adapters import Event
    from nonebot.adapters.onebot.v11 import Adapter, Bot

    bot = Bot(Adapter(nonebot.get_driver()), "10000")

    async def hook(event: Event) -> None:
        return None

    async def per_event_us(work: Callable[[], Awaitable[object]], calls: int = 2_000) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            for _ in range(calls):
                await work()
            best = min(best, time.process_time() - started)
        return best / calls * 1e6

    registered = set(nonebot.message._event_preprocessors)
    nonebot.message.event_preprocessor(hook)
    as_preprocessor = await per_event_us(lambda: nonebot.message.handle_event(bot, event))
    nonebot.message._event_preprocessors.intersection_update(registered)

    async def in_front() -> None:
        await hook(event)
        await nonebot.message.handle_event(bot, event)

    return as_preprocessor, await per_event_us(in_front)


def line(name: str, before: float, after: float, unit: str = "us") -> None:
    print(f"{name:<44} before {before:9.1f} {unit}   after {after:9.1f} {unit}   {before / after:6.1f}x less")


def main() -> int:
    import nonebot

    nonebot.init()
    from loguru import logger
    from nonebot.adapters.onebot.v11 import Adapter
    from nonebot.exception import NoLogException
    from nonebot.utils import escape_tag
    from pydantic import BaseModel, Field

    from plugins.greywind import validation_cache
    from plugins.greywind.event_lines import skip_event_lines
    from plugins.greywind.looplag import CollectorTuning
    from runtime.llm.tokens import TokenEstimator
    from runtime.logs import configure_logging, route_loguru
    from runtime.tools.spec import ToolSpec
    from tests.support import onebot_events as ob

    payload: dict[str, Any] = ob.group_message(
        self_id=10_000, group_id=700_001, user_id=42, message=[ob.at(10_000), ob.text(" 今天吃什么")]
    )
    nonebots = per_call_us(lambda: Adapter.json_to_event(dict(payload)), 2_000)
    validation_cache.install()
    kept = per_call_us(lambda: Adapter.json_to_event(dict(payload)), 2_000)
    line("NoneBot's json_to_event, per event", nonebots, kept)

    event = Adapter.json_to_event(dict(payload))
    as_nonebot = logger.patch(lambda record: record.update(name="nonebot.message")).opt(colors=True)

    def nonebot_line() -> None:  # as nonebot.message.handle_event writes it
        text = f"<m>{escape_tag('OneBot V11')} {escape_tag('10000')}</m> | "
        try:
            text += event.get_log_string()
        except NoLogException:
            return
        as_nonebot.success(text)

    with open(os.devnull, "w") as devnull:
        timings = []
        for level in ("DEBUG", "INFO"):  # DEBUG keeps the line, as INFO did at first
            redactor = configure_logging(json=True, level=level, secrets=["sk-bench-secret"], stream=devnull)
            route_loguru(redactor, level=level)
            timings.append(per_call_us(nonebot_line, 2_000))
        skip_event_lines()
        timings.append(per_call_us(nonebot_line, 2_000))
        logger.remove()
    line("NoneBot's line per event at INFO, rendered", timings[0], timings[1])
    line("... dropped in the filter, then not built", timings[1], timings[2])

    line("where the edge hears, per event", *asyncio.run(hearing(event)))

    class Search(BaseModel):
        query: str = Field(description="what to look for")
        limit: int = Field(5, ge=1, le=20)
        scope: list[str] = []

    tool = ToolSpec(name="search", description="Search.", execute=lambda a, c: None, args_model=Search)
    line(
        "a tool's schema, per model request",
        per_call_us(Search.model_json_schema, 500),
        per_call_us(tool.json_schema, 500),
    )

    persona = "你是灰风，一个住在群里的人。说话简短自然。" * 80
    tools = [tool.openai_schema() for _ in range(10)]
    packet = [{"role": "system", "content": persona}] + [{"role": "user", "content": "今天吃什么"}] * 30
    estimator = TokenEstimator()
    line(
        "a packet's token estimate",
        per_call_us(lambda: TokenEstimator().raw_messages(packet, tools), 300),
        per_call_us(lambda: estimator.raw_messages(packet, tools), 300),
    )

    state = [(str(n), [n], {"n": n}) for n in range(20_000)]  # what serving adds after start-up
    gc.collect()

    def full_collection_ms() -> float:
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            gc.collect()
            best = min(best, (time.perf_counter() - started) * 1000)
        return best

    before = full_collection_ms()
    tuning = CollectorTuning()
    tuning.apply()
    later = [(str(n), [n], {"n": n}) for n in range(20_000)]
    after = full_collection_ms()
    tuning.undo()
    print(f"{'':44} ({len(state) + len(later):,} objects of state, {tuning.frozen:,} frozen at start-up)")
    line("a full garbage collection", before, after, "ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
