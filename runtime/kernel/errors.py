"""Faults raised by the kernel. Decisions (attention, budgets, scheduling) are values, not exceptions.

::

    KernelError                      base of everything the kernel raises on purpose
    ├── IllegalTransition            an event or episode asked to move to a state its machine forbids
    ├── UnknownEvent                 an operation named an event id the store does not hold
    └── InvalidSetting               a kernel setting is out of range (names the setting)
"""

from __future__ import annotations


class KernelError(Exception):
    """Base class of the kernel's own faults."""


class IllegalTransition(KernelError):
    """Raised when a state machine is asked for a transition it does not allow."""

    def __init__(self, what: str, current: str, target: str) -> None:
        super().__init__(f"{what}: illegal transition {current} -> {target}")
        self.what = what
        self.current = current
        self.target = target


class UnknownEvent(KernelError):
    """Raised when an event id is not in the EventStore."""


class InvalidSetting(KernelError):
    """Raised when a kernel setting is out of range; the message names the setting."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
