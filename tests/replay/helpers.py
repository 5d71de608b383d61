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


def run_cli(
    *args: str | Path, timeout: float = 50.0, hash_seed: str | None = None, stdin: str | None = None
) -> Run:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GREYWIND_") and k != "PYTHONHASHSEED"}
    env["PYTHONIOENCODING"] = "utf-8"
    if hash_seed is not None:
        env["PYTHONHASHSEED"] = hash_seed
    proc = subprocess.run(
        [sys.executable, "-m", "runtime.replay", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        input=stdin.encode("utf-8") if stdin is not None else None,
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


_WORDS = (
    "今天", "吃饭", "游戏", "代码", "报错", "周末", "电影", "天气", "火锅", "考试", "上班",
    "Python", "asyncio", "部署", "数据库", "奶茶", "加班", "上线", "日志", "爬山",
)  # fmt: skip


def busy_log(path: Path, count: int = 600, *, seed: int = 7) -> Path:
    """A seeded log of ``count`` messages in five busy groups: many threads sharing words."""
    import random

    rng = random.Random(seed)
    t = T0
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            t += rng.expovariate(1 / 4.0)
            text = "".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6)))
            record = {
                "ts": round(t, 3),
                "group_id": 1 + rng.randrange(5),
                "user_id": rng.randint(1, 60),
                "message_id": i,
                "text": text + ("吗？" if rng.random() < 0.05 else ""),
                "at": [10000] if rng.random() < 0.02 else [],
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path
