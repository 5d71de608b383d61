"""Start the real ``python bot.py`` as a child process, the way a user runs it.

::

    with BotProcess(tmp_path, env={"SUPERUSERS": '["42"]'}) as bot:
        ...  # bot.ws_url, bot.records(), bot.wait_for_log("edge_started")
    assert bot.returncode == 0

Each process gets a free loopback port, its own ``GREYWIND_DATA_DIR`` and ``GREYWIND_CONFIG`` under the
test's temporary directory, JSON logs (``GREYWIND_LOG_FORMAT=json``) written to a file, and none of the
developer's own ``GREYWIND_*`` / ``ONEBOT_*`` variables. ``stop()`` sends SIGTERM and waits for the exit;
``returncode`` is then the exit status (a process that had to be killed is a test failure).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["ROOT", "BotProcess", "free_port"]

ROOT = Path(__file__).resolve().parents[2]
_SCRUBBED_PREFIXES = ("GREYWIND_", "ONEBOT_")
_SCRUBBED = {"HOST", "PORT", "SUPERUSERS", "DRIVER", "LOG_LEVEL", "ENVIRONMENT", "NICKNAME"}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class BotProcess:
    def __init__(
        self,
        workdir: Path,
        *,
        config: str | None = None,
        env: Mapping[str, str] | None = None,
        data_dir: Path | None = None,
        port: int | None = None,
        start_timeout: float = 30.0,
        script: Path | None = None,
    ) -> None:
        self.workdir = workdir
        self.script = script or ROOT / "bot.py"  # another NoneBot entry point (a benchmark's reference bot)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.data_dir = data_dir or workdir / "data"
        self.config_path = workdir / "greywind.toml"
        if config is not None or not self.config_path.exists():
            shipped = (ROOT / "config" / "greywind.toml").read_text(encoding="utf-8")
            self.config_path.write_text(config if config is not None else shipped, encoding="utf-8")
        self.log_path = workdir / f"bot-{self.port}.log"
        self._extra_env = dict(env or {})
        self._start_timeout = start_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None
        self.returncode: int | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/onebot/v11/ws"

    def environment(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(_SCRUBBED_PREFIXES) and key not in _SCRUBBED
        }
        env.update(
            HOST="127.0.0.1",
            PORT=str(self.port),
            GREYWIND_DATA_DIR=str(self.data_dir),
            GREYWIND_CONFIG=str(self.config_path),
            GREYWIND_LOG_FORMAT="json",
            LOG_LEVEL="INFO",
            PYTHONUNBUFFERED="1",
            PYTHONDONTWRITEBYTECODE="1",
        )
        env.update(self._extra_env)
        return env

    def start(self) -> BotProcess:
        self._log_file = self.log_path.open("ab")
        self._proc = subprocess.Popen(
            [sys.executable, str(self.script)],
            cwd=self.workdir,
            env=self.environment(),
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
        )
        self.returncode = None
        self._wait_listening()
        return self

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                self.kill()  # reaps it and closes the log file
                raise RuntimeError(
                    f"bot.py exited with {self.returncode} during start:\n{self.output()[-4000:]}"
                )
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2),
            ):
                return
            time.sleep(0.05)
        self.kill()
        raise TimeoutError(
            f"bot.py did not listen on {self.port} within {self._start_timeout}s:\n{self.output()[-4000:]}"
        )

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM, then wait; a process that does not exit in time is killed and reported."""
        proc = self._proc
        if proc is None:
            return self.returncode if self.returncode is not None else 0
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise TimeoutError(
                    f"bot.py ignored SIGTERM for {timeout}s:\n{self.output()[-4000:]}"
                ) from None
        self.returncode = proc.returncode
        self._proc = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return self.returncode

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(5)
        if self._proc is not None:
            self.returncode = self._proc.returncode
        self._proc = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def __enter__(self) -> BotProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.stop()
        else:
            with contextlib.suppress(Exception):
                self.stop(timeout=5)
            self.kill()

    # -- logs -----------------------------------------------------------------------------------

    def output(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def records(self) -> list[dict[str, Any]]:
        """The JSON log records so far (non-JSON lines, if any, are skipped)."""
        out = []
        for line in self.output().splitlines():
            line = line.strip()
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    out.append(json.loads(line))
        return out

    def wait_for_log(
        self,
        event: str,
        predicate: Callable[[dict[str, Any]], bool] | None = None,
        *,
        timeout: float = 10.0,
        count: int = 1,
    ) -> list[dict[str, Any]]:
        """Block until ``count`` records named ``event`` (matching ``predicate``) were logged."""
        deadline = time.monotonic() + timeout
        while True:
            found = [
                r for r in self.records() if r.get("event") == event and (predicate is None or predicate(r))
            ]
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"no {count}x {event!r} in the bot's log within {timeout}s:\n{self.output()[-4000:]}"
                )
            if not self.alive:
                raise RuntimeError(
                    f"bot.py is not running (exit {self.returncode}):\n{self.output()[-4000:]}"
                )
            time.sleep(0.05)

    async def await_log(
        self,
        event: str,
        predicate: Callable[[dict[str, Any]], bool] | None = None,
        *,
        within: float = 10.0,
        count: int = 1,
    ) -> list[dict[str, Any]]:
        """:meth:`wait_for_log` for async tests (polls without blocking the event loop)."""
        import asyncio

        deadline = time.monotonic() + within
        while True:
            try:
                return self.wait_for_log(event, predicate, timeout=0.0, count=count)
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise
            await asyncio.sleep(0.05)
