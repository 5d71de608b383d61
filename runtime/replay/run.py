"""run_replay: the engine over the messages, packets for what would speak, lines to the observers.

Observers see every line in output order: a message's line, then the activations its arrival settled,
with the activations that came due before the next message in between. The JSON-lines writer, the
report and the plot's trace are all observers, so they can never disagree about what happened.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol, TextIO

from runtime.kernel.message import ChatMessage
from runtime.kernel.settings import KernelSettings
from runtime.quiet_history import QuietTimeline
from runtime.replay.engine import (
    ActivationLine,
    Maintenance,
    MessageLine,
    Outcome,
    ReplayEngine,
    ReplayEngineStatistics,
)
from runtime.replay.packets import PacketAssembler
from runtime.replay.reader import SourceMessage

__all__ = ["JsonLinesWriter", "Observer", "dumps_line", "run_replay"]


class Observer(Protocol):
    def message(self, line: MessageLine) -> None: ...

    def activation(self, line: ActivationLine, prompt_tokens: int | None) -> None: ...


def dumps_line(record: dict[str, object]) -> str:
    """One output line: sorted keys, Chinese kept readable, nothing that depends on the run."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True)


class JsonLinesWriter:
    """Writes each line as JSON to ``stream``, one object a line."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def message(self, line: MessageLine) -> None:
        self._stream.write(dumps_line(line.to_json()) + "\n")

    def activation(self, line: ActivationLine, prompt_tokens: int | None) -> None:
        self._stream.write(dumps_line(line.to_json()) + "\n")


async def run_replay(
    messages: Sequence[SourceMessage],
    settings: KernelSettings,
    *,
    observers: Sequence[Observer],
    packets: PacketAssembler | None = None,
    maintenance: Maintenance | None = None,
    quiet: QuietTimeline | None = None,
) -> ReplayEngineStatistics | None:
    """Replay ``messages`` (in time order); the engine's statistics, or None for an empty log."""
    if not messages:
        return None
    engine = ReplayEngine(settings, start=messages[0].message.time, maintenance=maintenance, quiet=quiet)
    # Every message seen, by (chat, message id): a would-speak packet is built around its trigger.
    seen: dict[tuple[str, str], ChatMessage] = {}

    async def emit(lines: Sequence[ActivationLine]) -> None:
        for line in lines:
            tokens: int | None = None
            if line.outcome is Outcome.WOULD_SPEAK and packets is not None:
                event = line.event
                trigger = None
                if event.evidence_message_ids:
                    trigger = seen.get((event.chat_id, event.evidence_message_ids[0]))
                tokens = await packets.assemble(line, trigger)
            for observer in observers:
                observer.activation(line, tokens)

    for source in messages:
        await emit(engine.advance(source.message.time))
        line, settled = engine.ingest(source)
        message = source.message
        seen[(message.chat_id, message.message_id)] = message
        if packets is not None:
            packets.note(message, line.result.thread.thread.id)
        for observer in observers:
            observer.message(line)
        await emit(settled)
    await emit(engine.finish())
    return engine.statistics()
