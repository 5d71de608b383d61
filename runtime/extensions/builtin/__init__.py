"""The built-in extensions, loaded first and in this order (the tools' order is what the model sees).

Each is an ordinary :class:`~runtime.extensions.manifest.Extension`, loaded by the same loader as any
third-party one and switched off the same way (``[extensions] disabled = ["guess_number"]``). What
they need of the running bot beyond an extension's context they ask for as services (see
:mod:`runtime.extensions.builtin.services`).
"""

from __future__ import annotations

__all__ = ["BUILTIN_EXTENSIONS"]

_HERE = "runtime.extensions.builtin"

BUILTIN_EXTENSIONS: tuple[tuple[str, str], ...] = (
    ("memory_search", f"{_HERE}.memory:memory_search"),
    ("remember", f"{_HERE}.memory:remember"),
    ("schedule_message", f"{_HERE}.reminders:extension"),
    ("follow_up", f"{_HERE}.follow_up:extension"),
    ("current_time", f"{_HERE}.clock:extension"),
    ("tasks", f"{_HERE}.tasks:extension"),
    ("guess_number", f"{_HERE}.guess_number:extension"),
)
