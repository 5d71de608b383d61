"""``python -m runtime.replay``: the bot's kernel over a chat log on a virtual clock.

Users of comparable bots cannot tell why the bot spoke or stayed quiet. The replay runs the *same*
:class:`~runtime.kernel.kernel.Kernel` the bot runs (settings from the same config file) over a chat
log, with time taken from the log's timestamps, and prints one JSON line per message (thread, attention,
decision, reasons, action) and one per activation (``would_speak`` / ``budget_blocked`` / ``expired`` /
``superseded``). No model is called: an activation that would call one is charged to the budget exactly
as a real reply is, and the packet the bot would have sent is assembled (and optionally dumped).

::

    addressing.py   is a message aimed at the bot (the edge's rule, without NoneBot)
    reader.py       JSON lines -> ChatMessage; malformed lines become Problems, never exceptions
    database.py     the bot's own SQLite store -> the same messages (``--from-db``)
    engine.py       ReplayEngine: the kernel on a ManualClock; MessageLine / ActivationLine values
    packets.py      PacketAssembler: the Context Runtime over an in-memory store fed with the log
    run.py          run_replay: engine + packets + the observers (output, report, plot)
    report.py       ReplayReport: the per-chat table printed on stderr
    plot.py         attention over time per chat (matplotlib, the ``greywind[plot]`` extra)
    __main__.py     the command line

Exceptions (faults; a malformed input line is a value, reported and skipped)::

    ReplayError             the replay cannot run at all
     +-- ReplayInputError   the log or the database cannot be opened or read
     +-- ReplayStuck        the kernel kept returning activations without time moving on
     +-- PlotUnavailable    --plot was asked for but matplotlib is not installed
"""

from __future__ import annotations

__all__ = ["PlotUnavailable", "ReplayError", "ReplayInputError", "ReplayStuck"]


class ReplayError(Exception):
    """The replay cannot run at all."""


class ReplayInputError(ReplayError):
    """The chat log or the database cannot be opened or read."""


class ReplayStuck(ReplayError):
    """The kernel kept handing out activations at one instant; a guard against a loop that never ends."""


class PlotUnavailable(ReplayError):
    """``--plot`` needs matplotlib: ``pip install 'greywind[plot]'``."""
