"""Tools the persona may call from an episode: specs, the registry, results.

::

    ToolError                 base of the faults this package raises (registration mistakes only;
    │                         a failing *call* is a ToolResult, never an exception)
    ├── ToolSpecError         a spec is unusable: bad name, reserved name, bad schema, bad limits
    └── DuplicateToolError    a tool with that name is already registered

Invoking a tool never raises (except cancellation from outside): unknown tool, missing permission,
invalid arguments, timeout and an exception in the tool all come back as a failed :class:`ToolResult`
whose ``message`` the model can act on.
"""

from __future__ import annotations

from runtime.tools.errors import DuplicateToolError, ToolError, ToolSpecError
from runtime.tools.registry import ToolRegistry, ToolRegistryStatistics
from runtime.tools.spec import (
    RESERVED_TOOL_NAMES,
    ToolContext,
    ToolErrorKind,
    ToolResult,
    ToolSpec,
)

__all__ = [
    "RESERVED_TOOL_NAMES",
    "DuplicateToolError",
    "ToolContext",
    "ToolError",
    "ToolErrorKind",
    "ToolRegistry",
    "ToolRegistryStatistics",
    "ToolResult",
    "ToolSpec",
    "ToolSpecError",
]
