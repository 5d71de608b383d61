"""``bot.py``'s own helpers: which config file it reads."""

from __future__ import annotations

from pathlib import Path

import pytest

import bot


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


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_needs_no_access_token(host: str) -> None:
    assert bot.listen_refusal(host, None) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "bot.example.org"])
def test_off_loopback_needs_an_access_token(host: str) -> None:
    refusal = bot.listen_refusal(host, None)
    assert refusal is not None
    assert "ONEBOT_ACCESS_TOKEN" in refusal
    assert bot.listen_refusal(host, "") is not None
    assert bot.listen_refusal(host, "secret") is None
