"""Running the replay command line as users do: a child process, stdout and stderr captured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
GROUPS = FIXTURES / "groups.jsonl"
MALFORMED = FIXTURES / "malformed.jsonl"
CONFIG = FIXTURES / "replay.toml"
T0 = 1767225600.0


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


def run_cli(*args: str | Path, timeout: float = 50.0) -> Run:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GREYWIND_")}
    env["PYTHONIOENCODING"] = "utf-8"
    proc = subprocess.run(
        [sys.executable, "-m", "runtime.replay", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return Run(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"))


def message_lines(lines: list[dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """Message lines by message id (ids are unique across the fixture's chats)."""
    return {line["message_id"]: line for line in lines if line.get("type") != "activation"}


def activation_lines(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("type") == "activation"]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
