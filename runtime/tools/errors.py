"""Faults of the tools package (see the tree in ``runtime.tools``)."""

from __future__ import annotations


class ToolError(Exception):
    """Base class of mistakes made when *registering* tools."""


class ToolSpecError(ToolError):
    """Raised when a ToolSpec cannot be used: bad or reserved name, bad schema, bad limits."""


class DuplicateToolError(ToolError):
    """Raised when a tool name is already taken in the registry."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a tool named {name!r} is already registered")
        self.name = name
