"""Where the data lives: ``GREYWIND_DATA_DIR`` (default ``./data``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DATA_DIR_ENV = "GREYWIND_DATA_DIR"
DEFAULT_DATA_DIR = "./data"


def data_dir_from_env(environ: Mapping[str, str] | None = None) -> Path:
    """The data directory named by ``GREYWIND_DATA_DIR`` (``./data`` when unset or empty).

    Only resolves the path; ``SqliteStore.open`` creates it and refuses an unwritable one.
    """
    env = os.environ if environ is None else environ
    return Path(env.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR).expanduser()
