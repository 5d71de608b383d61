"""The stall trace: a loop held by synchronous work gets one record naming what held it."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from runtime.traces.stalls import ENV, THRESHOLD_ENV, StallTrace, collapse


def hold_the_loop_in_a_long_save(seconds: float) -> None:
    time.sleep(seconds)  # what a synchronous save of a big state does to every chat


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.anyio
async def test_a_held_loop_gets_one_record_naming_the_function_that_held_it(tmp_path: Path) -> None:
    trace = StallTrace(tmp_path / "stalls.jsonl", threshold=0.04)
    async with anyio.create_task_group() as tg:
        tg.start_soon(trace.run)
        await anyio.sleep(0.3)  # a free loop: nothing to record
        hold_the_loop_in_a_long_save(0.3)
        await anyio.sleep(0.2)
        tg.cancel_scope.cancel()
    [stall] = records(tmp_path / "stalls.jsonl")
    assert 250 <= stall["ms"] <= 1_000
    assert stall["samples"] >= 10  # every 5 ms while it lasted (a loaded machine samples fewer)
    stack, count = stall["stacks"][0]
    assert count >= stall["samples"] // 2
    innermost = stack.split(";")[-1]
    assert innermost.startswith("tests/traces/test_stalls.py:hold_the_loop_in_a_long_save:")
    assert "test_a_held_loop_gets_one_record" in stack  # root first: its caller before it
    assert stack.index("test_a_held_loop_gets_one_record") < stack.index("hold_the_loop_in_a_long_save")
    assert abs(stall["at"] - time.time()) < 60


@pytest.mark.anyio
async def test_a_full_collection_during_a_stall_is_named_with_its_generation(tmp_path: Path) -> None:
    trace = StallTrace(tmp_path / "stalls.jsonl", threshold=0.04)
    async with anyio.create_task_group() as tg:
        tg.start_soon(trace.run)
        await anyio.sleep(0.1)
        started = time.monotonic()
        while time.monotonic() - started < 0.2:  # a stall with a full collection inside it
            gc.collect()
        await anyio.sleep(0.2)
        tg.cancel_scope.cancel()
    [stall] = records(tmp_path / "stalls.jsonl")
    full = [c for c in stall["collections"] if c["generation"] == 2]
    assert full
    assert full[0]["count"] >= 1
    assert full[0]["ms"] > 0
    assert any("test_a_full_collection_during_a_stall" in stack for stack, _ in stall["stacks"])
    assert trace._collect not in gc.callbacks  # stopped with the loop's task


def test_it_is_off_unless_the_variable_names_a_file(tmp_path: Path) -> None:
    assert StallTrace.from_env({}) is None
    assert StallTrace.from_env({ENV: ""}) is None
    trace = StallTrace.from_env({ENV: str(tmp_path / "s.jsonl"), THRESHOLD_ENV: "100"})
    assert trace is not None
    assert trace.path == tmp_path / "s.jsonl"
    assert trace._threshold == pytest.approx(0.1)


def test_a_stack_collapses_root_first_with_short_paths() -> None:
    def inner() -> str:
        import sys

        return collapse(sys._getframe())

    frames = inner().split(";")
    assert frames[-1].startswith("tests/traces/test_stalls.py:inner:")
    assert frames[-2].startswith("tests/traces/test_stalls.py:test_a_stack_collapses_root_first")
