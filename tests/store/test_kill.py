"""``kill -9`` a process writing through the writer: committed stays, at most ~one interval is lost."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from runtime.store.sqlite import DB_FILENAME
from tests.conftest import backend_ready
from tests.store.kill_child import open_target

ROOT = Path(__file__).resolve().parents[2]
INTERVAL = 0.2
# One commit in flight and the event loop's scheduling on a busy two-core machine.
SLACK = 0.5


def _read_lines(proc: subprocess.Popen[str], lines: list[str], committed: list[int]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.strip())
        if line.startswith("committed "):
            committed.append(int(line.split()[1]))


async def _stored(path: str) -> list[tuple[int, float]]:
    store = await open_target(path, account="10002")
    try:
        messages = await store.list_messages("group:1", limit=10_000_000)
    finally:
        await store.close()
    return sorted((int(m.message_id), m.time) for m in messages)


@pytest.mark.e2e
@pytest.mark.parametrize("run_for", [1.0, 1.37])
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_kill_9_keeps_everything_committed_and_loses_at_most_an_interval(
    tmp_path: Path, run_for: float, backend: str, request: pytest.FixtureRequest
) -> None:
    backend_ready(request, backend)
    path = "postgresql" if backend == "postgresql" else str(tmp_path / DB_FILENAME)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.store.kill_child", path, str(int(INTERVAL * 1000))],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: list[str] = []
    committed: list[int] = []
    reader = threading.Thread(target=_read_lines, args=(proc, lines, committed), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while len(committed) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(committed) >= 3, f"the child never committed: {lines[-5:]}"
        time.sleep(run_for)  # kill at an arbitrary point of a flush interval
        last_reported = committed[-1]
        killed_at = time.time()
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(10)
        reader.join(5)
        assert proc.stdout is not None
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL

    stored = asyncio.run(_stored(path))
    ids = [i for i, _ in stored]
    # Batches commit in order, whole: what survived is a gap-free prefix of what was queued...
    assert ids == list(range(len(ids)))
    # ...containing everything the child saw committed before the kill...
    assert len(ids) >= last_reported
    # ...and missing only what was queued within about one flush interval before the kill.
    newest = stored[-1][1]
    age = killed_at - newest
    print(f"kill -9: {len(ids)} stored, {last_reported} seen committed, newest {age:.3f} s old")
    assert age <= INTERVAL + SLACK, (age, len(ids))
