"""One pydantic ``TypeAdapter`` per type for NoneBot's validation, instead of one per call.

NoneBot's ``nonebot.compat.type_validate_python`` (and ``type_validate_json``) builds a new
``TypeAdapter`` on every call, and pydantic builds a core schema for each one. The OneBot adapter
calls it once per event and NoneBot's ``Message`` once per segment, so on a busy connection building
schemas costs more than validating the events does (NoneBot caches adapters itself elsewhere, for
the same reason). :func:`install` gives every NoneBot module that imported those two functions a
version that keeps one adapter per type; validation itself is pydantic's, unchanged. A type that
cannot be a dictionary key is validated as before, with an adapter of its own.

Call it once NoneBot's adapter modules are imported (``bot.py`` does, before loading the plugin).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["install"]

_adapters: dict[Any, Any] = {}


def _adapter(type_: Any) -> Any:
    from pydantic import TypeAdapter

    try:
        found = _adapters.get(type_)
    except TypeError:  # unhashable: not kept
        return TypeAdapter(type_)
    if found is None:
        found = _adapters[type_] = TypeAdapter(type_)
    return found


def type_validate_python(type_: Any, data: Any) -> Any:
    """Validate ``data`` as ``type_`` (NoneBot's function, with the adapter kept)."""
    return _adapter(type_).validate_python(data)


def type_validate_json(type_: Any, data: str | bytes) -> Any:
    """Validate JSON ``data`` as ``type_`` (NoneBot's function, with the adapter kept)."""
    return _adapter(type_).validate_json(data)


def install() -> int:
    """Replace NoneBot's two functions wherever a loaded ``nonebot`` module holds them; returns how
    many names were replaced (0 under pydantic v1, where NoneBot does not build adapters, and when
    already installed)."""
    import nonebot.compat as compat

    if not compat.PYDANTIC_V2 or compat.type_validate_python is type_validate_python:
        return 0
    originals = {
        "type_validate_python": (compat.type_validate_python, type_validate_python),
        "type_validate_json": (compat.type_validate_json, type_validate_json),
    }
    replaced = 0
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "nonebot" or name.startswith("nonebot.")):
            continue
        for attribute, (original, cached) in originals.items():
            if getattr(module, attribute, None) is original:
                setattr(module, attribute, cached)
                replaced += 1
    return replaced
