"""Faults of the memory layer. A compression that fails is a value in the injection log and a retry;
these are raised only where a caller asked for something that cannot be done.

::

    MemoryLayerError            base of everything runtime.memory raises on purpose
    ├── InvalidSummaryError     a compression answer holds no JSON object with the summary's shape
    │                           (the old summary stays; the injector logs it and retries later)
    └── CompressionFailedError  ``compress_now`` could not produce a new summary; ``cause`` is the
                                model fault or the InvalidSummaryError behind it
"""

from __future__ import annotations


class MemoryLayerError(Exception):
    """Base class of memory-layer faults."""


class InvalidSummaryError(MemoryLayerError):
    """Raised when a compression model's answer is not a usable summary."""


class CompressionFailedError(MemoryLayerError):
    """Raised by ``MemoryInjector.compress_now`` when no new summary could be made."""

    def __init__(self, conversation: str, cause: BaseException) -> None:
        super().__init__(f"compression of {conversation} failed: {type(cause).__name__}: {cause}")
        self.conversation = conversation
        self.cause = cause
