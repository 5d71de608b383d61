"""``--plot``: a PNG of attention over time per chat; without matplotlib, a clear refusal up front."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

import pytest

from runtime.replay import PlotUnavailable
from runtime.replay.__main__ import main
from runtime.replay.plot import AttentionTrace, render
from tests.replay.helpers import CONFIG, GROUPS, run_cli


def test_without_matplotlib_plot_is_refused_before_the_replay_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a)
    )
    out, err = io.StringIO(), io.StringIO()
    code = main(
        [str(GROUPS), "--config", str(CONFIG), "--plot", str(tmp_path / "a.png")], stdout=out, stderr=err
    )
    assert code == 2
    assert "pip install 'greywind[plot]'" in err.getvalue()
    assert out.getvalue() == ""
    assert not (tmp_path / "a.png").exists()


def test_render_names_the_extra_when_matplotlib_cannot_be_imported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(PlotUnavailable, match=r"greywind\[plot\]"):
        render(AttentionTrace(), tmp_path / "a.png", high=0.65, medium=0.35)


def test_plot_draws_a_png_of_every_chat(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "attention.png"
    run = run_cli(GROUPS, "--config", CONFIG, "--plot", png)
    assert run.code == 0, run.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot: {png} (5 of 5 chats)" in run.stderr
