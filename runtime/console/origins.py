"""Where each configured value comes from, as the console shows it: ``default`` (the built-in
default), ``config`` (the shared tables of the config file set it otherwise), ``account`` (the
account's own ``[[accounts]]`` table) or ``group`` (a chat's own override, which the pages add).

The account layer is :func:`runtime.config.accounts.resolved_values`' (the same ``/status full``
shows); what it calls ``default`` is split here into the built-in default and the shared config by
comparing with a configuration built from nothing.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from runtime.config import GreyWindConfig
from runtime.config.accounts import ACCOUNT_SECTIONS, resolved_values

__all__ = ["ConsoleOrigin", "value_origins"]

ConsoleOrigin = Literal["default", "config", "account", "group"]


@cache
def _builtin() -> dict[str, object]:
    return {v.key: v.value for v in resolved_values(GreyWindConfig(), None)}


def value_origins(
    shared: GreyWindConfig, account: str | None, sections: tuple[str, ...] = ACCOUNT_SECTIONS
) -> dict[str, tuple[object, ConsoleOrigin]]:
    """Dotted key -> (the value ``account`` runs with, its origin), over ``sections``; ``shared`` is
    the whole config file (with its ``[[accounts]]`` tables), ``account`` None for the shared stack."""
    builtin = _builtin()
    out: dict[str, tuple[object, ConsoleOrigin]] = {}
    for item in resolved_values(shared, account, sections=sections):
        origin: ConsoleOrigin = "account"
        if item.origin != "account":
            origin = "default" if builtin.get(item.key, object()) == item.value else "config"
        out[item.key] = (item.value, origin)
    return out
