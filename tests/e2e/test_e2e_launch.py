"""Starting the real ``bot.py`` the way operators write its environment: QQ ids as they come, a port
that is not one, a port that is taken."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.bot_process import ROOT, BotProcess
from tests.e2e.live import connected_peer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
ADMIN = 4_242


def _run(
    tmp_path: Path, env: dict[str, str], timeout: float = 30.0
) -> tuple[subprocess.CompletedProcess[str], float]:
    process = BotProcess(tmp_path)  # only for its environment; never started
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(ROOT / "bot.py")],
        cwd=tmp_path,
        env={**process.environment(), **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done, time.monotonic() - started


@pytest.mark.parametrize("superusers", [str(ADMIN), f"[{ADMIN}]"])
async def test_superusers_written_as_a_bare_id_or_a_list_of_numbers_may_use_admin_commands(
    tmp_path: Path, superusers: str
) -> None:
    with BotProcess(tmp_path, env={"SUPERUSERS": superusers}) as bot:
        bot.wait_for_log("edge_started")
        async with connected_peer(bot, self_id=SELF_ID) as peer:
            await peer.say_in_private(ADMIN, "/status")
            call = await peer.wait_for_call("send_private_msg", within=15)
            assert call.params["user_id"] == ADMIN
            assert "影子模式" in call.text  # the status, not the model: there is none
    assert bot.returncode == 0


@pytest.mark.parametrize(
    ("env", "variable"), [({"PORT": "abc"}, "PORT="), ({"SUPERUSERS": "12;34"}, "SUPERUSERS=")]
)
async def test_a_launch_variable_that_cannot_be_read_is_refused_in_one_line(
    tmp_path: Path, env: dict[str, str], variable: str
) -> None:
    done, _ = _run(tmp_path, env)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    refusal = [line for line in done.stderr.splitlines() if line.startswith("greywind:")]
    assert len(refusal) == 1
    assert variable in refusal[0]


async def test_a_taken_port_is_refused_before_the_bot_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done, _ = _run(tmp_path, {"PORT": str(port)})
    assert done.returncode == 3, done.stderr[-2000:]
    assert f"PORT={port}" in done.stderr
    # Refused before start-up: the plugin never loaded, no data directory was made.
    assert "edge_started" not in done.stdout + done.stderr
    assert not (tmp_path / "data").exists()
