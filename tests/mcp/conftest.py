"""Real MCP servers as subprocesses: the sample server (tests/mcp/sample_server.py) over stdio and over
streamable HTTP (uvicorn on a loopback port), and the published ``mcp-server-time``.

Test configs use short timeouts, pings and back-offs, so a lost server is noticed and back within
about a second.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PY = sys.executable

# [mcp] for the tests: a lost server is noticed within ~0.2 s and tried again after 0.05-0.4 s.
FAST = {"reconnect_min_ms": 50, "reconnect_max_ms": 400, "ping_interval_ms": 100}


def stdio_server(name: str = "sample", **keys: Any) -> dict[str, Any]:
    return {
        "name": name,
        "command": PY,
        "args": ["-m", "tests.mcp.sample_server", "stdio"],
        "env": {"PYTHONPATH": str(ROOT)},
        "timeout_s": 3,
        "start_timeout_s": 20,
        **keys,
    }


def time_server(**keys: Any) -> dict[str, Any]:
    return {
        "name": "time",
        "command": PY,
        "args": ["-m", "mcp_server_time", "--local-timezone=Asia/Shanghai"],
        "timeout_s": 5,
        "start_timeout_s": 20,
        **keys,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class HttpServer:
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [PY, "-m", "tests.mcp.sample_server", "http", str(self.port)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the sample HTTP server did not start")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def config(self, name: str = "web", **keys: Any) -> dict[str, Any]:
        return {"name": name, "url": self.url, "timeout_s": 3, "start_timeout_s": 20, **keys}


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer(free_port())
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path
