"""A throwaway PostgreSQL cluster for the tests: ``initdb`` into a temporary directory, ``pg_ctl start``
on a free loopback port, stopped and deleted at the end.

The server binaries are Debian's (``/usr/lib/postgresql/<version>/bin``, the newest version there) or
whatever ``initdb`` is on the ``PATH``; ``scripts/test-deps/postgresql.sh`` installs them. PostgreSQL
refuses to run as root: as root the cluster belongs to the ``postgres`` system user (created if the
package did not), everything it touches in a directory that user owns. Authentication is ``trust`` on
loopback only; each test asks :meth:`PostgresCluster.fresh_database` for a database of its own.

``tests/conftest.py``'s ``postgres`` session fixture starts one cluster on first use. Without the
binaries the tests that need it are skipped, except where ``CI=true``: there they fail, loudly.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["PostgresCluster", "PostgresUnavailable", "server_binaries"]

_SUPERUSER = "greywind"
_TEMPLATE = "greywind_template"
_ROOT = Path(__file__).resolve().parents[2]
_RUN_AS = "postgres"


class PostgresUnavailable(RuntimeError):
    """The binaries are missing or the server did not start (the message says which, and why)."""


def server_binaries() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``: the newest Debian version first."""
    versions = []
    for path in Path("/usr/lib/postgresql").glob("*/bin/initdb"):
        with contextlib.suppress(ValueError):
            versions.append((float(path.parent.parent.name), path.parent))
    if versions:
        return max(versions)[1]
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ensure_system_user(name: str) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
            capture_output=True,
        )


class PostgresCluster:
    """``start()`` it, ``dsn(database)`` to connect, ``stop()`` removes everything it made."""

    def __init__(self) -> None:
        binaries = server_binaries()
        if binaries is None:
            raise PostgresUnavailable(
                "no PostgreSQL server binaries (initdb); run scripts/test-deps/postgresql.sh"
            )
        self.bin = binaries
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="greywind-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as_root = os.geteuid() == 0
        self._names = itertools.count(1)
        self._started = False
        self._templated = False

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / argv[0]), *argv[1:]]
        if self._as_root:
            command = ["runuser", "-u", _RUN_AS, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)

    def start(self) -> PostgresCluster:
        if self._as_root:
            _ensure_system_user(_RUN_AS)
            account = pwd.getpwnam(_RUN_AS)
            os.chown(self.root, account.pw_uid, account.pw_gid)
        self.root.chmod(0o755)
        init = self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            _SUPERUSER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C.UTF-8",
        )
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {init.stderr.strip() or init.stdout.strip()}")
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} "
            "-c fsync=off -c synchronous_commit=on -c full_page_writes=off -c max_connections=200 "
            "-c shared_buffers=32MB"
        )
        started = self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start"
        )
        if started.returncode != 0:
            raise PostgresUnavailable(f"pg_ctl start failed: {started.stderr.strip()} {self._log_tail()}")
        self._started = True
        return self

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(encoding="utf-8", errors="replace")[-2000:]
        return ""

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{_SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _sql(self, statement: str) -> None:
        made = self._run(
            "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", _SUPERUSER, "-d", "postgres",
            "-v", "ON_ERROR_STOP=1", "-qc", statement,
        )  # fmt: skip
        if made.returncode != 0:
            raise PostgresUnavailable(f"{statement} failed: {made.stderr.strip()}")

    def _template(self) -> str:
        """A database with the store's migrations applied (by the store's own code, in a child
        process), copied for each test: a copy is much faster than migrating anew."""
        if not self._templated:
            self._sql(f'CREATE DATABASE "{_TEMPLATE}"')
            code = (
                "import asyncio, sys, asyncpg\n"
                "from runtime.store.postgres.schema import migrate\n"
                "async def main():\n"
                "    c = await asyncpg.connect(sys.argv[1])\n"
                "    try: await migrate(c, 'template')\n"
                "    finally: await c.close()\n"
                "asyncio.run(main())\n"
            )
            migrated = subprocess.run(
                [sys.executable, "-c", code, self.dsn(_TEMPLATE)],
                cwd=_ROOT,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if migrated.returncode != 0:
                raise PostgresUnavailable(f"migrating the template failed: {migrated.stderr.strip()[-2000:]}")
            self._templated = True
        return _TEMPLATE

    def fresh_database(self, hint: str = "t", *, migrated: bool = True) -> str:
        """A new database (the store's schema already in it unless ``migrated`` is False); its DSN."""
        name = re.sub(r"[^a-z0-9_]", "_", hint.lower())[:40] + f"_{next(self._names)}"
        template = f' TEMPLATE "{self._template()}"' if migrated else ""
        self._sql(f'CREATE DATABASE "{name}"{template}')
        return self.dsn(name)

    def stop(self) -> None:
        if self._started:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            self._started = False
        deadline = time.monotonic() + 10
        while self.root.exists() and time.monotonic() < deadline:
            shutil.rmtree(self.root, ignore_errors=True)
            time.sleep(0.05)
