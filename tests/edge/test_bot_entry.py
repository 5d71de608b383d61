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


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("12345", ["12345"]),
        ("[12345]", ["12345"]),
        ('["12345", "67890"]', ["12345", "67890"]),
        ("12345,67890", ["12345", "67890"]),
        ("12345, 67890 12345", ["12345", "67890"]),
        ("12345，67890", ["12345", "67890"]),
        ("onebot:12345", ["onebot:12345"]),
        ("", []),
        ("[]", []),
    ],
)
def test_superusers_are_read_as_people_write_them(text: str, ids: list[str]) -> None:
    assert bot.parse_superusers(text) == ids


@pytest.mark.parametrize("text", ["[12345", '{"a": 1}', "[true]", "[[1]]", "12345;rm", "张三"])
def test_superusers_that_are_not_ids_are_refused_naming_the_variable(text: str) -> None:
    with pytest.raises(bot.LaunchError, match="SUPERUSERS="):
        bot.parse_superusers(text)


@pytest.mark.parametrize("text", ["abc", "0", "65536", "-1", "80.5", ""])
def test_a_port_that_is_not_a_port_is_refused_naming_the_variable(text: str) -> None:
    with pytest.raises(bot.LaunchError, match="PORT="):
        bot.parse_port(text)


def test_the_launch_environment_is_settled_from_the_dotenv_files_too(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("ENVIRONMENT=dev\nPORT=9000\n", encoding="utf-8")
    (tmp_path / ".env.dev").write_text("superusers=12345,67890\n", encoding="utf-8")
    environ: dict[str, str] = {}
    bot.normalise_launch_environment(environ, tmp_path)
    assert environ == {"SUPERUSERS": '["12345", "67890"]', "PORT": "9000"}
    environ = {"PORT": " 8081 ", "SUPERUSERS": "4242"}  # the environment wins over the files
    bot.normalise_launch_environment(environ, tmp_path)
    assert environ == {"PORT": "8081", "SUPERUSERS": '["4242"]'}


def test_a_port_in_use_is_found_before_anything_starts() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        reason = bot.port_taken("127.0.0.1", port)
        assert reason is not None
        assert f"PORT={port}" in reason
    assert bot.port_taken("127.0.0.1", port) is None
