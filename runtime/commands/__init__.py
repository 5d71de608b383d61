"""Commands, declared once (name, aliases, parser, permission, help text, handler) and read by both the
edge's dispatch and the help text; the built-in admin commands are declarations like any extension's.

::

    spec.py      Command / Usage (parsed values), CommandSpec (a declaration), CommandCall
    registry.py  CommandRegistry: parse, dispatch, help text; register returns a disposer
    admin.py     the built-in admin commands (/status /why /mute /unmute /lexicon /persona /bind)
    control.py   RuntimeControl: what the admin commands and mute words reach
"""

from __future__ import annotations

from runtime.commands.admin import ADMIN_COMMANDS, admin_registry, parse_duration
from runtime.commands.registry import FAILED, CommandRegistry, DuplicateCommandError
from runtime.commands.spec import Command, CommandCall, CommandSpec, Permission, Usage
from runtime.ports.control import RuntimeControl

__all__ = [
    "ADMIN_COMMANDS",
    "FAILED",
    "Command",
    "CommandCall",
    "CommandRegistry",
    "CommandSpec",
    "DuplicateCommandError",
    "Permission",
    "RuntimeControl",
    "Usage",
    "admin_registry",
    "parse_duration",
]
