"""``python -m runtime.console set-password [--data-dir DIR]``: hash a console password (argon2) into
the data directory (``GREYWIND_DATA_DIR``, default ``./data``). The password is asked twice on a
terminal, or read from the first line of standard input otherwise. Exit status 2 on a refused
password."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path

from runtime.console.auth import write_password


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.console")
    commands = parser.add_subparsers(dest="command", required=True)
    setter = commands.add_parser("set-password", help="hash a console password into the data directory")
    setter.add_argument("--data-dir", type=Path, default=Path(os.environ.get("GREYWIND_DATA_DIR") or "data"))
    args = parser.parse_args(argv)
    if sys.stdin.isatty():
        first = getpass.getpass("console password: ")
        if getpass.getpass("again: ") != first:
            print("greywind: the two passwords differ; nothing written", file=sys.stderr)
            return 2
    else:
        first = sys.stdin.readline().rstrip("\r\n")
    try:
        path = write_password(args.data_dir, first)
    except ValueError as exc:
        print(f"greywind: {exc}", file=sys.stderr)
        return 2
    print(f"console password written to {path}; restart the bot to use it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
