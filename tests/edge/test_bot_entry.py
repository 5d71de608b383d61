"""``bot.py``'s own helpers: segment repair before the adapter sees a frame, and the config file choice."""

from __future__ import annotations

from pathlib import Path

import pytest

import bot


def test_a_text_segment_without_text_is_repaired() -> None:
    event = {
        "post_type": "message",
        "message": [{"type": "text", "data": {}}, {"type": "text"}, {"type": "at"}],
    }
    assert bot._repair_segments(event)
    assert event["message"][0] == {"type": "text", "data": {"text": ""}}
    assert event["message"][1] == {"type": "text", "data": {"text": ""}}
    assert event["message"][2] == {"type": "at"}, "only text segments are touched"


def test_well_formed_events_are_left_alone() -> None:
    event = {"message": [{"type": "text", "data": {"text": "hi"}}]}
    assert not bot._repair_segments(event)
    assert not bot._repair_segments({"message": "[CQ:at,qq=1] string format"})
    assert not bot._repair_segments([1, 2, 3])


def test_config_file_comes_from_the_environment_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GREYWIND_CONFIG", str(tmp_path / "x.toml"))
    assert bot._config_file() == tmp_path / "x.toml"


def test_config_file_defaults_to_the_shipped_one_from_any_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GREYWIND_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert bot._config_file() == bot.HERE / "config" / "greywind.toml"
    assert bot._config_file().exists()
