"""Whether the console is on: only with a password (the variable or the hashed file the CLI writes);
without one the start-up log says how to turn it on, and off loopback that line is an error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from runtime.console.auth import PASSWORD_ENV, PASSWORD_FILE, load_password
from runtime.console.switch import build_console
from runtime.ports import ConsoleSite
from tests.app.conftest import make_config, running
from tests.e2e.bot_process import ROOT


@pytest.mark.asyncio
async def test_off_without_a_password_refused_off_loopback_on_with_one(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    async with running(make_config(None), data_dir, model=False, shadow=True) as harness:
        runtime = harness.runtime
        with capture_logs() as logs:
            assert build_console(ConsoleSite(runtime, runtime.edge, "127.0.0.1"), {}) is None
            assert build_console(ConsoleSite(runtime, runtime.edge, "0.0.0.0"), {}) is None
            app = build_console(
                ConsoleSite(runtime, runtime.edge, "0.0.0.0"), {PASSWORD_ENV: "s3cret-enough"}
            )
        assert app is not None
        off, refused, on = logs
        assert off["event"] == "console_off"
        assert off["log_level"] == "info"
        assert PASSWORD_ENV in off["how"]
        assert "set-password" in off["how"]
        assert refused["event"] == "console_refused"
        assert refused["log_level"] == "error"
        assert on["event"] == "console_on"
        assert on["password"] == PASSWORD_ENV


def test_set_password_writes_an_argon2_hash_that_wins_over_the_variable(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    command = [sys.executable, "-m", "runtime.console", "set-password", "--data-dir", str(data_dir)]
    short = subprocess.run(command, input="short\n", capture_output=True, text=True, cwd=ROOT, check=False)
    assert short.returncode == 2
    assert "at least 8" in short.stderr
    assert not (data_dir / PASSWORD_FILE).exists()
    done = subprocess.run(
        command, input="a long passphrase\n", capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    stored = (data_dir / PASSWORD_FILE).read_text(encoding="utf-8")
    assert stored.startswith("$argon2id$")
    assert "a long passphrase" not in stored
    assert (data_dir / PASSWORD_FILE).stat().st_mode & 0o077 == 0
    password = load_password(data_dir, {PASSWORD_ENV: "another one"})
    assert password is not None
    assert password.check("a long passphrase")
    assert not password.check("another one")
