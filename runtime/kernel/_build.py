"""Positional builders for the frozen slotted dataclasses made on the per-message path.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (the class's own
``__setattr__`` refuses), and in Python 3.11 calling a class with a Python ``__init__`` takes the
slow call path: a 13-field :class:`~runtime.kernel.events.BotEvent` cost about 1.4 µs. A builder
sets the slots through their descriptors instead, from a function generated once per class (as
``dataclasses`` generates ``__init__``), in about half the time. The object is the same: same
class, same fields, equal to ``cls(*values)``, still frozen to everyone else.

Use a builder only where every field is passed, in field order and already in its final form: it
applies no defaults and runs no ``__post_init__`` (a class that has one is refused).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["builder"]

T = TypeVar("T")


def builder(cls: type[T]) -> Callable[..., T]:
    """A function ``(field_1, ..., field_n) -> cls`` that sets the slots of a new instance."""
    if not dataclasses.is_dataclass(cls) or not hasattr(cls, "__slots__"):
        raise TypeError(f"{cls.__name__} is not a slotted dataclass")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__ a builder would skip")
    names = [field.name for field in dataclasses.fields(cls)]
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for name in names:
        namespace[f"_set_{name}"] = cls.__dict__[name].__set__  # the slot's member descriptor
    lines = [f"def build_{cls.__name__}({', '.join(names)}):", "    self = _new(_cls)"]
    lines += [f"    _set_{name}(self, {name})" for name in names]
    lines.append("    return self")
    exec("\n".join(lines), namespace)  # generated from the class's own field names
    built: Callable[..., T] = namespace[f"build_{cls.__name__}"]
    return built
