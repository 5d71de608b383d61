"""Positional builders for the frozen slotted dataclasses made on the per-message path.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (the class's own
``__setattr__`` refuses), and in Python 3.11 calling a class with a Python ``__init__`` takes the
slow call path: a 13-field :class:`~runtime.kernel.events.BotEvent` cost about 1.4 µs. Setting the
slots through their member descriptors (``descriptor.__set__(obj, value)``) halves that, but each of
those calls still goes through a method wrapper that unpacks an argument tuple.

A builder instead fills an instance of a *twin*: a plain class with the same ``__slots__`` and no
``__setattr__``, whose attribute stores the interpreter does in place, then gives the instance the
frozen class (``obj.__class__ = cls``; CPython allows it only between classes of the same layout,
which is checked when the builder is made). The object is the same: same class, same fields, equal to
``cls(*values)``, frozen to everyone from then on. A class whose layout the twin cannot match falls
back to the member descriptors.

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
    """A function ``(field_1, ..., field_n) -> cls`` that fills the slots of a new instance."""
    if not dataclasses.is_dataclass(cls) or not hasattr(cls, "__slots__"):
        raise TypeError(f"{cls.__name__} is not a slotted dataclass")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__ a builder would skip")
    names = [field.name for field in dataclasses.fields(cls)]
    twin = _twin(cls)
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_twin": twin}
    lines = [f"def build_{cls.__name__}({', '.join(names)}):"]
    if twin is not None:
        lines.append("    self = _twin()")  # no __init__: cheaper than object.__new__(_twin)
        lines += [f"    self.{name} = {name}" for name in names]
        lines.append("    self.__class__ = _cls")
    else:
        lines.append("    self = _new(_cls)")
        for name in names:
            namespace[f"_set_{name}"] = getattr(cls, name).__set__  # the slot's descriptor, maybe a base's
        lines += [f"    _set_{name}(self, {name})" for name in names]
    lines.append("    return self")
    exec("\n".join(lines), namespace)  # generated from the class's own field names
    built: Callable[..., T] = namespace[f"build_{cls.__name__}"]
    return built


def _twin(cls: type) -> type | None:
    """A plain class with ``cls``'s slots whose instances may become ``cls``'s, or ``None``."""
    if cls.__bases__ != (object,):
        return None
    twin = type(f"_{cls.__name__}Twin", (), {"__slots__": tuple(cls.__dict__["__slots__"])})
    probe: Any = object.__new__(twin)
    try:
        probe.__class__ = cls
    except TypeError:  # not the same layout (a __weakref__ or __dict__ slot, a C base)
        return None
    return twin
