"""Faults raised by the Context Runtime. What it decides (a topic thread, a trim) are values.

::

    ContextError                     base of everything the Context Runtime raises on purpose
    ├── UnknownTopicThreadError           an operation named a topic thread the store does not hold
    ├── UnknownSessionError               an operation named a session the store does not hold
    ├── UnknownTaskError                  an operation named a task the store does not hold
    ├── IllegalSessionTransitionError     a session was asked to move to a state its lifecycle forbids
    └── BudgetTooSmallError               the token budget cannot hold even the persona: a config fault
"""

from __future__ import annotations

__all__ = [
    "BudgetTooSmallError",
    "ContextError",
    "IllegalSessionTransitionError",
    "UnknownSessionError",
    "UnknownTaskError",
    "UnknownTopicThreadError",
]


class ContextError(Exception):
    """Base class of the Context Runtime's own faults."""


class UnknownTopicThreadError(ContextError):
    """Raised when a topic thread id is not in the store."""


class UnknownSessionError(ContextError):
    """Raised when a session id is not in the store."""


class UnknownTaskError(ContextError):
    """Raised when a task id is not in the store."""


class IllegalSessionTransitionError(ContextError):
    """Raised when a session is asked for a state change design/000 §8 does not allow."""

    def __init__(self, session_id: str, current: str, target: str) -> None:
        super().__init__(f"session {session_id}: illegal transition {current} -> {target}")
        self.session_id = session_id
        self.current = current
        self.target = target


class BudgetTooSmallError(ContextError):
    """Raised when the prompt budget cannot hold the persona and a minimal input.

    The persona is never trimmed, so a budget below it is a configuration fault (a context window too
    small for the persona, or a reply reserve too large), not something to degrade around.
    """

    def __init__(self, budget: int, needed: int) -> None:
        super().__init__(f"prompt budget {budget} tokens cannot hold the persona and input ({needed} tokens)")
        self.budget = budget
        self.needed = needed
