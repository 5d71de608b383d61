"""Stage stamps of addressed messages on their way to the model, for a latency breakdown.

An @ crosses the frame guard, NoneBot, the dispatcher, the kernel, the activation loop, its chat's
lock and a slot, the context build and the model router before its request leaves; when it is slow
to reach the model, which of those it waited in is the question. With ``GREYWIND_STAGE_TRACE`` naming
a file, :func:`stamp` appends one line per stage, ``<message id>\\t<stage>\\t<monotonic seconds>``
(``time.monotonic()``: one clock for every process on the machine, so a bench can set the stamps
beside its own). Without it :func:`stamp` is one ``None`` check. Only addressed messages are stamped,
so the file stays small at any rate.

The message a stage belongs to is named explicitly where it is at hand (the edge, the runtime's
entry), and by :func:`following` for everything the episode does in its task (a context variable).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TextIO

__all__ = ["ENV", "following", "stamp", "stamp_current"]

ENV = "GREYWIND_STAGE_TRACE"

_current: ContextVar[str | None] = ContextVar("greywind_stage_key", default=None)


def _open() -> TextIO | None:
    path = os.environ.get(ENV)
    if not path:
        return None
    return open(path, "a", encoding="utf-8", buffering=1)  # the process's lifetime


_out: TextIO | None = _open()
ENABLED = _out is not None


def stamp(key: object, stage: str) -> None:
    """``key`` (a message id) reached ``stage`` now."""
    if _out is not None and key is not None:
        _out.write(f"{key}\t{stage}\t{time.monotonic():.6f}\n")


def stamp_current(stage: str) -> None:
    """The message the current task follows (:func:`following`) reached ``stage`` now."""
    if _out is not None:
        stamp(_current.get(), stage)


@contextlib.contextmanager
def following(key: object) -> Iterator[None]:
    """Inside, :func:`stamp_current` stamps ``key``."""
    if _out is None or key is None:
        yield
        return
    token = _current.set(str(key))
    try:
        yield
    finally:
        _current.reset(token)
