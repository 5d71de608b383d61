"""Small measuring helpers the benchmarks share: percentiles, a latency line, a process's RSS."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile of ``values`` (not empty)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def describe(name: str, values: Sequence[float], wanted: int) -> str:
    """One latency line in ms: how many samples of ``wanted``, p50, p95, p99 and max."""
    if not values:
        return f"{name}: no samples (0/{wanted})"
    return (
        f"{name}: n={len(values)}/{wanted}  p50 {statistics.median(values):.1f} ms  "
        f"p95 {percentile(values, 0.95):.1f} ms  p99 {percentile(values, 0.99):.1f} ms  "
        f"max {max(values):.1f} ms"
    )


def rss_mb(pid: int | str = "self") -> float:
    """A process's resident memory now, in MB (Linux ``/proc``; nan where it cannot be read)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")
