"""Configuration: a TOML file validated by pydantic, refused at start with a message naming the key.

``load_config(path)`` reads the file (``GREYWIND_CONFIG``, default ``config/greywind.toml``); a file may
set only some keys. ``ConfigError`` is raised for a missing or unparsable file, an unknown key or a bad
value, and its message names every offending key as a dotted path (``budget.min_interval_ms``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runtime.config.accounts import account_problems
from runtime.config.mcp import SECRET_ERROR
from runtime.config.schema import GreyWindConfig

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "ConfigError",
    "GreyWindConfig",
    "config_path",
    "load_config",
    "parse_config",
]

DEFAULT_CONFIG_PATH = Path("config/greywind.toml")


class ConfigError(ValueError):
    """The configuration cannot be used; ``keys`` lists the dotted keys at fault."""

    def __init__(self, message: str, keys: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.keys = keys


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """The config file the process should read: ``GREYWIND_CONFIG`` or the default."""
    env = os.environ if env is None else env
    return Path(env.get("GREYWIND_CONFIG") or DEFAULT_CONFIG_PATH)


def parse_config(data: Mapping[str, Any], *, source: str = "<config>") -> GreyWindConfig:
    """Validate already-parsed TOML data."""
    try:
        config = GreyWindConfig.model_validate(dict(data))
    except ValidationError as exc:
        problems: list[str] = []
        keys: list[str] = []
        for err in exc.errors():
            key = ".".join(str(part) for part in err["loc"]) or "(top level)"
            keys.append(key)
            if err["type"] == "extra_forbidden":
                problems.append(f"{key}: unknown key")
            elif key.startswith("accounts") and isinstance(err.get("input"), list | dict):
                problems.append(f"{key}: {err['msg']}")  # the whole table is no help to read
            elif err["type"] == SECRET_ERROR:
                problems.append(f"{key}: {err['msg']}")  # the value may be a secret: not repeated
            else:
                problems.append(f"{key}: {err['msg']} (got {err.get('input')!r})")
        message = f"invalid configuration in {source}:\n  " + "\n  ".join(problems)
        raise ConfigError(message, tuple(keys)) from None
    # Each account's keys, checked as the sections they become over the shared defaults.
    layered = account_problems(config)
    if layered:
        message = f"invalid configuration in {source}:\n  " + "\n  ".join(f"{k}: {p}" for k, p in layered)
        raise ConfigError(message, tuple(k for k, _ in layered))
    return config


def load_config(path: str | os.PathLike[str] | None = None) -> GreyWindConfig:
    """Read and validate a TOML config file; ``None`` means :func:`config_path`."""
    file = Path(path) if path is not None else config_path()
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {file} (set GREYWIND_CONFIG to another file)") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file} is not valid UTF-8 TOML: {exc}") from None
    return parse_config(data, source=str(file))
