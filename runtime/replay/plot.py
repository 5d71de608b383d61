"""``--plot FILE.png``: attention over time per chat, the thresholds, and the moments the bot would speak.

:class:`AttentionTrace` is an observer of the replay (pure: it only collects points); :func:`render`
draws them with matplotlib, an optional dependency (``pip install 'greywind[plot]'``). Without it
:func:`render` raises :class:`~runtime.replay.PlotUnavailable` with that hint, and the replay's other
outputs are unaffected.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from runtime.kernel.attention import Decision
from runtime.replay import PlotUnavailable
from runtime.replay.engine import ActivationLine, MessageLine, Outcome

__all__ = ["MAX_CHATS", "PLOT_HINT", "AttentionTrace", "TraceStatistics", "render"]

PLOT_HINT = "--plot needs matplotlib: pip install 'greywind[plot]' (or pip install matplotlib)"

#: Chats drawn at most (the busiest); a figure with hundreds of panels helps nobody.
MAX_CHATS = 12

_COLOURS = {
    Decision.FORCED: "tab:red",
    Decision.HIGH: "tab:orange",
    Decision.MEDIUM: "tab:blue",
    Decision.LOW: "tab:gray",
}


@dataclass(frozen=True, slots=True)
class TraceStatistics:
    chats: int
    points: int
    speeches: int


class AttentionTrace:
    """Collects ``(time, score, decision)`` per chat and the times of ``would_speak``."""

    def __init__(self) -> None:
        self.points: defaultdict[str, list[tuple[float, float, Decision]]] = defaultdict(list)
        self.speeches: defaultdict[str, list[float]] = defaultdict(list)
        self.blocked: defaultdict[str, list[float]] = defaultdict(list)

    def message(self, line: MessageLine) -> None:
        if line.source.message.from_self:
            return
        attention = line.result.attention
        self.points[line.chat_id].append((line.source.message.time, attention.score, attention.decision))

    def activation(self, line: ActivationLine, prompt_tokens: int | None) -> None:
        if line.outcome is Outcome.WOULD_SPEAK:
            self.speeches[line.chat_id].append(line.time)
        elif line.outcome is Outcome.BUDGET_BLOCKED:
            self.blocked[line.chat_id].append(line.time)

    def busiest(self, limit: int = MAX_CHATS) -> list[str]:
        """Chat ids with the most messages (ties by id), at most ``limit``, sorted by id."""
        ranked = sorted(self.points, key=lambda chat: (-len(self.points[chat]), chat))
        return sorted(ranked[:limit])

    def statistics(self) -> TraceStatistics:
        return TraceStatistics(
            chats=len(self.points),
            points=sum(len(p) for p in self.points.values()),
            speeches=sum(len(s) for s in self.speeches.values()),
        )


def render(trace: AttentionTrace, path: Path, *, high: float, medium: float) -> list[str]:
    """Draw ``trace`` into ``path`` (PNG); the chat ids drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable(PLOT_HINT) from exc

    chats = trace.busiest()
    if not chats:
        chats = sorted(trace.speeches)[:MAX_CHATS]
    times = [t for chat in chats for t, _, _ in trace.points.get(chat, [])]
    times += [t for chat in chats for t in trace.speeches.get(chat, [])]
    start = min(times) if times else 0.0

    fig, axes = plt.subplots(
        max(1, len(chats)), 1, figsize=(13, 2.6 * max(1, len(chats))), sharex=True, squeeze=False
    )
    for ax, chat in zip(axes[:, 0], chats or [""], strict=False):
        points = trace.points.get(chat, [])
        for decision, colour in _COLOURS.items():
            xs = [(t - start) / 60 for t, _, d in points if d is decision]
            ys = [s for _, s, d in points if d is decision]
            if xs:
                ax.scatter(xs, ys, s=14, color=colour, label=decision.value, zorder=3)
        if points:
            ax.plot(
                [(t - start) / 60 for t, _, _ in points],
                [s for _, s, _ in points],
                color="lightgray",
                linewidth=0.8,
                zorder=1,
            )
        ax.axhline(high, color="tab:orange", linestyle="--", linewidth=0.9, label=f"high {high:g}")
        ax.axhline(medium, color="tab:blue", linestyle=":", linewidth=0.9, label=f"medium {medium:g}")
        for i, t in enumerate(trace.speeches.get(chat, [])):
            ax.axvline(
                (t - start) / 60,
                color="tab:green",
                alpha=0.5,
                linewidth=1.2,
                label="would speak" if i == 0 else None,
            )
        for i, t in enumerate(trace.blocked.get(chat, [])):
            ax.axvline(
                (t - start) / 60,
                color="black",
                alpha=0.35,
                linestyle="--",
                linewidth=1.0,
                label="budget-blocked" if i == 0 else None,
            )
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("attention")
        ax.set_title(chat, loc="left", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, frameon=False)
    origin = datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    axes[-1, 0].set_xlabel(f"minutes since {origin}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return chats
