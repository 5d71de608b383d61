"""Scopes: who owns a registration, and how it is undone.

Every registration (a tool, a lexicon term, a game, a scheduled activation, a timer) hands its
disposer to a :class:`Scope`. Disposing the scope — a plugin unloading, a game being withdrawn —
runs them all in reverse order of registration, once. Scopes nest: a child is disposed with its
parent, and a child disposed early leaves its parent clean. A disposer that raises is logged and
the rest still run: one broken plugin never leaves another's registrations behind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

import structlog

from runtime.extensions.errors import ScopeClosedError

log = structlog.get_logger("greywind.extensions")

# Whatever a disposer returns is ignored (``ToolRegistry``'s return None, ``Scope.dispose`` a count).
Disposer = Callable[[], object]


@dataclass(frozen=True, slots=True)
class ScopeStatistics:
    name: str
    live: int
    children: int
    disposed: bool
    errors: int


class Scope:
    """An owner of disposers; see the module docstring."""

    def __init__(self, name: str, parent: Scope | None = None) -> None:
        self.name: str = name if parent is None else f"{parent.name}/{name}"
        self.parent = parent
        self._disposers: dict[int, Disposer] = {}
        self._children: dict[int, Scope] = {}
        self._next = 0
        self._disposed = False
        self._errors = 0
        self._detach: Callable[[], None] | None = None

    @property
    def disposed(self) -> bool:
        return self._disposed

    def add(self, disposer: Disposer) -> Callable[[], None]:
        """Own ``disposer``; the returned handle runs it now (once) and forgets it.

        Adding to a disposed scope runs ``disposer`` at once and raises :class:`ScopeClosedError`, so a
        late registration can never outlive its owner.
        """
        if self._disposed:
            self._run(disposer)
            raise ScopeClosedError(f"scope {self.name!r} is disposed; the registration was undone")
        key = self._next
        self._next += 1
        self._disposers[key] = disposer

        def handle() -> None:
            owned = self._disposers.pop(key, None)
            if owned is not None:
                self._run(owned)

        return handle

    def child(self, name: str) -> Scope:
        """A nested scope, disposed with this one (and removable from it by disposing it first)."""
        if self._disposed:
            raise ScopeClosedError(f"scope {self.name!r} is disposed")
        scope = Scope(name, self)
        key = self._next
        self._children[key] = scope
        detach = self.add(scope.dispose)

        def forget() -> None:
            self._children.pop(key, None)
            detach()

        scope._detach = forget
        return scope

    def dispose(self) -> int:
        """Undo everything, newest first; idempotent. Returns how many disposers failed."""
        if self._disposed:
            return 0
        self._disposed = True
        failed_before = self._errors
        while self._disposers:
            key = next(reversed(self._disposers))
            self._run(self._disposers.pop(key))
        self._children.clear()
        if self._detach is not None:
            # Leave the parent clean; our entry there only calls this method, which is now a no-op.
            detach, self._detach = self._detach, None
            detach()
        return self._errors - failed_before

    def _run(self, disposer: Disposer) -> None:
        try:
            disposer()
        except Exception as exc:
            self._errors += 1
            log.warning("disposer_failed", scope=self.name, error=repr(exc))

    def statistics(self) -> ScopeStatistics:
        return ScopeStatistics(
            name=self.name,
            live=len(self._disposers),
            children=len(self._children),
            disposed=self._disposed,
            errors=self._errors,
        )

    def __enter__(self) -> Scope:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.dispose()
