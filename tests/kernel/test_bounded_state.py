"""What the kernel keeps stays within its caps however many messages arrive, and housekeeping over
that state stays cheap: it runs on the event loop every chat shares."""

from __future__ import annotations

import pytest

from runtime.kernel import threads as threads_module
from runtime.kernel.kernel import Kernel
from runtime.kernel.lexicon.learning import WhitespaceSegmenter
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.settings import KernelSettings
from runtime.kernel.threads import ThreadSettings

CHATS = 20
MAX_THREADS = 8


def _kernel() -> Kernel:
    settings = KernelSettings(
        self_ids=("10001",), threads=ThreadSettings(gap=1.0, max_threads_per_chat=MAX_THREADS)
    )
    return Kernel(settings, segmenter=WhitespaceSegmenter())


def _feed(kernel: Kernel, count: int, *, start: float = 0.0) -> float:
    """``count`` messages over ``CHATS`` chats, each past the thread gap: a new thread nearly every time."""
    t = start
    for n in range(count):
        t += 2.0
        kernel.ingest(
            ChatMessage(f"m{start}-{n}", ChatKind.GROUP, str(n % CHATS), f"u{n % 97}", "u", t, f"话题{n}")
        )
    return t


def test_housekeeping_copies_no_thread_to_find_the_gone_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = _kernel()
    now = _feed(kernel, CHATS * MAX_THREADS * 3)
    copies = 0
    real = threads_module._snapshot

    def counting(thread: threads_module.ThreadState) -> object:
        nonlocal copies
        copies += 1
        return real(thread)

    monkeypatch.setattr(threads_module, "_snapshot", counting)
    kernel.prune(now)
    # Thousands of live threads at a busy bot's scale: a copy of each was tens of ms on the loop.
    assert copies == 0
    live = kernel.threads.statistics().threads
    assert 0 < live <= CHATS * MAX_THREADS
    assert len(kernel._match_keys) <= live  # the lexicon keys of dropped threads went with them


def test_a_thread_dropped_at_the_cap_is_gone_and_a_live_one_still_matches_after_housekeeping() -> None:
    kernel = _kernel()
    now = _feed(kernel, CHATS * MAX_THREADS * 3)
    kernel.prune(now)
    chat = kernel.threads.recent("group:0", now, limit=1)
    assert chat
    assert chat[0].id in kernel.threads
    assert "th-never" not in kernel.threads
