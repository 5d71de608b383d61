"""``kill -9`` under a flood loses nothing the bot had read: the inbound journal and its replay.

The real ``bot.py`` is sent 2,500 messages over 50 groups as fast as a OneBot peer can send them
(several times what it ingests per second), killed with SIGKILL a moment after the last frame, and
started again on the same data directory. Every message the peer sent must then be in the SQLite
file, each once; the replay must have delivered exactly the ones the kill had left unstored.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.faults.kill_flood import flood_kill_restart

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio, pytest.mark.timeout(120)]

MESSAGES = 2_500
GROUPS = 50


async def test_kill_9_under_a_flood_loses_no_message_the_bot_had_read(tmp_path: Path) -> None:
    run = await flood_kill_restart(tmp_path, count=MESSAGES, groups=GROUPS, read_wait=1.0)
    print(
        f"sent {len(run.sent)} in {run.send_seconds:.2f} s; stored at the kill {len(run.after_kill)}; "
        f"after the restart {len(run.after_restart)}; replay {run.replayed}"
    )
    assert run.restarted_exit == 0
    # The flood outran the bot: the kill found much of it not yet in SQLite (else this proves nothing).
    assert run.lost_at_kill > 0
    missing = run.sent - set(run.after_restart)
    assert not missing, f"{len(missing)} of {len(run.sent)} messages lost, e.g. {sorted(missing)[:3]}"
    twice = [key for key, n in Counter(run.after_restart).items() if n > 1]
    assert not twice
    # Exactly the unstored ones went through the runtime again: nothing was ingested twice.
    assert run.replayed["delivered"] + run.replayed["stored_only"] == len(run.sent - set(run.after_kill))
