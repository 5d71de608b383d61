"""A benchmark run as a script has ``bench/`` on its import path, behind the project's root (each
script puts the root first): a script named like an installed or standard module hides that module
from every import of the run, its own and its libraries'."""

from __future__ import annotations

import sys
from importlib.machinery import PathFinder
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def test_no_benchmark_script_hides_a_module_it_or_its_libraries_import() -> None:
    elsewhere = [p for p in sys.path if Path(p or ".").resolve() not in (BENCH, ROOT)]
    hidden = {}
    for script in sorted(BENCH.glob("*.py")):
        spec = PathFinder.find_spec(script.stem, elsewhere)
        if spec is not None or script.stem in sys.builtin_module_names:
            hidden[script.name] = spec.origin if spec is not None else "built in"
    assert not hidden, f"rename these benchmarks: {hidden}"
