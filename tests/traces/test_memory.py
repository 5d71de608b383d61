"""The memory trace: what grew after tracing began is named by the line that allocated it."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest

from runtime.traces.memory import AFTER_ENV, ENV, EVERY_ENV, FRAMES_ENV, MemoryTrace

KEPT: list[bytes] = []  # what a leak keeps: every message's copy in a list nobody trims


def keep_every_message(count: int) -> None:
    KEPT.extend(bytes(1024) + i.to_bytes(4, "little") for i in range(count))


def keep_the_latest(count: int, cap: int) -> None:
    """A capped buffer: each new record replaces the oldest past ``cap``."""
    keep_every_message(count)
    del KEPT[: max(0, len(KEPT) - cap)]


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(autouse=True)
def _nothing_kept() -> Any:
    KEPT.clear()
    was_tracing = tracemalloc.is_tracing()
    yield
    KEPT.clear()
    assert tracemalloc.is_tracing() == was_tracing  # a trace stops what it started, nothing else


@pytest.mark.anyio
async def test_growth_after_tracing_starts_is_named_by_the_line_that_allocated_it(tmp_path: Path) -> None:
    keep_every_message(500)  # before tracing: start-up's, not the growth asked about
    trace = MemoryTrace(tmp_path / "memory.jsonl", after=0.0, every=0.1)
    async with anyio.create_task_group() as tg:
        tg.start_soon(trace.run)
        await anyio.sleep(0.05)
        keep_every_message(2_000)
        await anyio.sleep(0.3)
        tg.cancel_scope.cancel()
    written = records(tmp_path / "memory.jsonl")
    assert len(written) >= 2  # every 0.1 s, then the stop's
    last = written[-1]
    top = last["since_first"]["top"][0]
    assert top["where"].startswith("tests/traces/test_memory.py:")
    assert top["where"] == f"tests/traces/test_memory.py:{_line_of('KEPT.extend(')}"
    assert top["blocks"] >= 2_000  # the 2,000 kept after tracing began, not the 500 before
    assert 2_000 <= top["kb"] <= 2_500  # 2,000 copies of ~1 KB
    assert last["since_first"]["kb"] >= top["kb"]
    assert last["traced_mb"] >= 2.0
    assert last["rss_mb"] is None or last["rss_mb"] > 0
    assert trace.records == len(written)


@pytest.mark.anyio
async def test_tracing_waits_for_after_and_records_nothing_when_stopped_before(tmp_path: Path) -> None:
    was_tracing = tracemalloc.is_tracing()
    trace = MemoryTrace(tmp_path / "memory.jsonl", after=30.0, every=0.1)
    async with anyio.create_task_group() as tg:
        tg.start_soon(trace.run)
        await anyio.sleep(0.2)
        assert tracemalloc.is_tracing() == was_tracing  # still waiting: nothing traced yet
        tg.cancel_scope.cancel()
    assert not (tmp_path / "memory.jsonl").exists()
    assert trace.records == 0


def test_deeper_tracebacks_name_the_callers_root_first(tmp_path: Path) -> None:
    trace = MemoryTrace(tmp_path / "memory.jsonl", after=0.0, every=1.0, frames=3)
    trace.start()
    try:
        keep_every_message(1_000)
        record = trace.record()
    finally:
        trace.stop()
    frames = record["since_first"]["top"][0]["where"].split(";")
    kept = f"tests/traces/test_memory.py:{_line_of('KEPT.extend(')}"
    caller = f"tests/traces/test_memory.py:{_line_of('keep_every_message(1_000)')}"
    assert frames[-1] == kept  # the innermost: the line that allocated
    assert caller in frames
    assert frames.index(caller) < frames.index(kept)


def test_a_capped_buffer_turning_over_grows_since_the_first_snapshot_not_since_the_previous(
    tmp_path: Path,
) -> None:
    keep_the_latest(1_000, cap=1_000)  # full before tracing: none of it traced
    trace = MemoryTrace(tmp_path / "memory.jsonl", after=0.0, every=1.0)
    trace.start()
    try:
        keep_the_latest(1_000, cap=1_000)  # replaced once: the new copies traced, the old frees not
        turned_over = trace.record()
        keep_the_latest(1_000, cap=1_000)  # and again: now both sides are traced
        level = trace.record()
    finally:
        trace.stop()
    kept = f"tests/traces/test_memory.py:{_line_of('KEPT.extend(')}"
    first_top = turned_over["since_first"]["top"][0]
    assert first_top["where"] == kept
    assert first_top["kb"] >= 1_000  # the replacements count as growth
    level_places = {p["where"]: p for p in level["since_previous"]["top"]}
    assert abs(level_places.get(kept, {"kb": 0.0})["kb"]) < 50  # a turned-over buffer: flat
    assert abs(level["since_previous"]["kb"]) < 200
    assert level["since_first"]["kb"] >= 1_000  # still "grown" against the first snapshot


def test_a_record_before_the_start_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="not started"):
        MemoryTrace(tmp_path / "m.jsonl").record()


def test_it_is_off_unless_the_variable_names_a_file(tmp_path: Path) -> None:
    assert MemoryTrace.from_env({}) is None
    assert MemoryTrace.from_env({ENV: ""}) is None
    trace = MemoryTrace.from_env(
        {ENV: str(tmp_path / "m.jsonl"), AFTER_ENV: "5", EVERY_ENV: "2.5", FRAMES_ENV: "4"}
    )
    assert trace is not None
    assert (trace.path, trace.after, trace.every, trace.frames) == (tmp_path / "m.jsonl", 5.0, 2.5, 4)
    defaults = MemoryTrace.from_env({ENV: str(tmp_path / "m.jsonl")})
    assert defaults is not None
    assert (defaults.after, defaults.every, defaults.frames) == (60.0, 60.0, 1)


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        (AFTER_ENV, "-1"),
        (AFTER_ENV, "soon"),
        (EVERY_ENV, "0"),
        (EVERY_ENV, "nan"),
        (EVERY_ENV, "inf"),
        (FRAMES_ENV, "1.5"),
        (FRAMES_ENV, "0"),
    ],
)
def test_a_bad_setting_is_refused_naming_the_variable(tmp_path: Path, name: str, raw: str) -> None:
    with pytest.raises(ValueError, match=name) as refused:
        MemoryTrace.from_env({ENV: str(tmp_path / "m.jsonl"), name: raw})
    assert repr(raw) in str(refused.value)


def _line_of(text: str) -> int:
    """The line of this file where ``text`` first occurs (in code, not in this helper)."""
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line and "_line_of" not in line)
