"""The ToolRegistry: the set of tools an episode may call, and the one place they are called from.

``invoke`` is where a tool's failures stop: unknown name, missing permission, arguments that do not
fit the schema, a timeout or an exception all become a failed :class:`ToolResult` with a message the
model can act on, and a result over the size cap is cut with a marker naming the full size. Nothing a
tool does can raise out of ``invoke`` except cancellation coming from outside.

Synchronous tools run inline on the event loop, so they must be quick (a game move, a lookup in
memory); anything that waits on I/O is written ``async`` and then honours the timeout.
"""

from __future__ import annotations

import builtins
import inspect
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import structlog
from pydantic import BaseModel, ValidationError

from runtime.tools._schema import validate
from runtime.tools.errors import DuplicateToolError
from runtime.tools.spec import ToolContext, ToolErrorKind, ToolResult, ToolSpec

log = structlog.get_logger("greywind.tools")

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_RESULT_CHARS = 4_000


@dataclass(frozen=True, slots=True)
class ToolRegistryStatistics:
    tools: int
    invocations: int
    succeeded: int
    failed: int
    timeouts: int
    truncated: int
    failures_by_kind: tuple[tuple[str, int], ...]


class ToolRegistry:
    """Named tools with permissions, timeouts and result caps. ``register`` returns a disposer."""

    def __init__(
        self, *, default_timeout: float = DEFAULT_TIMEOUT, max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    ) -> None:
        if default_timeout <= 0 or max_result_chars < 1:
            raise ValueError("default_timeout and max_result_chars must be positive")
        self._tools: dict[str, ToolSpec] = {}
        self._default_timeout = default_timeout
        self._max_result_chars = max_result_chars
        self._invocations = 0
        self._succeeded = 0
        self._truncated = 0
        self._failures: dict[ToolErrorKind, int] = {}

    # -- registration -----------------------------------------------------------------------

    def register(self, spec: ToolSpec) -> Callable[[], None]:
        """Add ``spec``; the returned disposer removes exactly this registration (idempotent)."""
        if spec.name in self._tools:
            raise DuplicateToolError(spec.name)
        self._tools[spec.name] = spec

        def dispose() -> None:
            # A later registration under the same name belongs to someone else: leave it.
            if self._tools.get(spec.name) is spec:
                del self._tools[spec.name]

        return dispose

    def unregister(self, name: str) -> bool:
        """Remove the tool called ``name``; ``False`` when there was none."""
        return self._tools.pop(name, None) is not None

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def list(self, permissions: Iterable[str] | None = None) -> list[ToolSpec]:
        """Tools in registration order; with ``permissions``, only those the holder may call."""
        if permissions is None:
            return list(self._tools.values())
        granted = frozenset(permissions)
        return [spec for spec in self._tools.values() if spec.permissions <= granted]

    def openai_schemas(self, permissions: Iterable[str] | None = None) -> builtins.list[dict[str, Any]]:
        """The Chat Completions ``tools`` entries for :meth:`list` (same filter, same order)."""
        return [spec.openai_schema() for spec in self.list(permissions)]

    # -- invocation -------------------------------------------------------------------------

    async def invoke(self, name: str, args: object, context: ToolContext) -> ToolResult:
        """Call tool ``name`` with ``args`` on behalf of ``context``; every failure is a result."""
        self._invocations += 1
        spec = self._tools.get(name)
        if spec is None:
            known = ", ".join(s.name for s in self.list(context.permissions)) or "none"
            return self._fail(
                name, ToolErrorKind.UNKNOWN_TOOL, f"there is no tool named {name!r}; available tools: {known}"
            )
        missing = spec.permissions - context.permissions
        if missing:
            return self._fail(
                name,
                ToolErrorKind.PERMISSION_DENIED,
                f"calling {name} needs permission {', '.join(sorted(missing))}, "
                "which this conversation does not have",
                spec=spec,
            )
        parsed, problem = self._parse_args(spec, args)
        if problem is not None:
            return self._fail(name, ToolErrorKind.INVALID_ARGUMENTS, problem, spec=spec)

        timeout = spec.timeout if spec.timeout is not None else self._default_timeout
        started = time.perf_counter()
        try:
            with anyio.move_on_after(timeout) as scope:
                value = spec.execute(parsed, context)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:
            elapsed = time.perf_counter() - started
            log.warning(
                "tool_failed",
                tool=name,
                chat_id=context.chat_id,
                episode_id=context.episode_id,
                error=repr(exc),
            )
            return self._fail(
                name,
                ToolErrorKind.EXCEPTION,
                f"the tool raised {type(exc).__name__}: {_short(str(exc))}",
                spec=spec,
                elapsed=elapsed,
            )
        elapsed = time.perf_counter() - started
        if scope.cancelled_caught:
            log.warning("tool_timeout", tool=name, chat_id=context.chat_id, timeout=timeout)
            return self._fail(
                name,
                ToolErrorKind.TIMEOUT,
                f"no result within {timeout:g} s; the call was abandoned",
                spec=spec,
                elapsed=elapsed,
            )
        return self._success(spec, value, elapsed)

    def _parse_args(self, spec: ToolSpec, args: object) -> tuple[Any, str | None]:
        if args is None:
            args = {}
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as exc:
                return None, f"arguments are not valid JSON ({exc.msg}); send a JSON object"
        if not isinstance(args, Mapping):
            return None, f"arguments must be a JSON object, got {type(args).__name__}"
        if spec.args_model is not None:
            try:
                return spec.args_model.model_validate(dict(args)), None
            except ValidationError as exc:
                return None, _explain(spec, exc)
        if spec.parameters is not None:
            problems = validate(spec.parameters, args)
            if problems:
                return None, f"invalid arguments for {spec.name}: " + "; ".join(problems)
        return dict(args), None

    def _success(self, spec: ToolSpec, value: object, elapsed: float) -> ToolResult:
        text = _render(value)
        cap = spec.max_result_chars or self._max_result_chars
        full = len(text)
        truncated = full > cap
        if truncated:
            self._truncated += 1
            text = text[:cap] + f"\n[truncated: showing {cap} of {full} characters]"
        self._succeeded += 1
        return ToolResult(
            name=spec.name,
            ok=True,
            content=text,
            truncated=truncated,
            full_size=full,
            elapsed=elapsed,
            side_effect=spec.side_effect,
        )

    def _fail(
        self,
        name: str,
        kind: ToolErrorKind,
        message: str,
        *,
        spec: ToolSpec | None = None,
        elapsed: float = 0.0,
    ) -> ToolResult:
        self._failures[kind] = self._failures.get(kind, 0) + 1
        return ToolResult.failure(
            name, kind, message, elapsed=elapsed, side_effect=spec.side_effect if spec else False
        )

    def statistics(self) -> ToolRegistryStatistics:
        failed = sum(self._failures.values())
        return ToolRegistryStatistics(
            tools=len(self._tools),
            invocations=self._invocations,
            succeeded=self._succeeded,
            failed=failed,
            timeouts=self._failures.get(ToolErrorKind.TIMEOUT, 0),
            truncated=self._truncated,
            failures_by_kind=tuple(sorted((k.value, n) for k, n in self._failures.items())),
        )


def _explain(spec: ToolSpec, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "missing":
            parts.append(f"{where}: required but missing")
        elif err["type"] == "extra_forbidden":
            parts.append(f"{where}: unknown argument")
        else:
            parts.append(f"{where}: {err['msg']} (got {_short(repr(err.get('input')), 60)})")
    props = spec.json_schema().get("properties", {})
    expected = ", ".join(props) or "no arguments"
    return f"invalid arguments for {spec.name}: " + "; ".join(parts) + f". Expected: {expected}"


def _render(value: object) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "(no result)"
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
