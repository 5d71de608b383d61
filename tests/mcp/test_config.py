"""``[[mcp.servers]]`` is checked strictly at load: each mistake is one line naming the key, and a value
that may be a secret is never repeated in the error."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.config import ConfigError, parse_config
from runtime.mcp import tool_name


def refused(*servers: dict[str, Any], **mcp: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config({"mcp": {"servers": list(servers), **mcp}})
    return str(caught.value)


def test_a_literal_header_value_is_refused_without_repeating_it() -> None:
    message = refused({"name": "x", "url": "https://h/mcp", "headers": {"Authorization": "Bearer sk-SECRET"}})
    assert "mcp.servers.0: header values are never read from the config file" in message
    assert 'headers_env = {Authorization = "GREYWIND_MCP_X_TOKEN"}' in message
    assert "sk-SECRET" not in message


def test_a_header_value_written_where_its_variable_belongs_is_refused_without_repeating_it() -> None:
    message = refused(
        {"name": "x", "url": "https://h/mcp", "headers_env": {"Authorization": "Bearer sk-SECRET"}}
    )
    assert "mcp.servers.0.headers_env: headers_env.Authorization must name an environment variable" in message
    assert "sk-SECRET" not in message


def test_a_secret_written_where_its_variable_belongs_in_env_from_is_refused_without_repeating_it() -> None:
    message = refused({"name": "x", "command": "srv", "env_from": {"API_KEY": "sk-SECRET value"}})
    assert "mcp.servers.0.env_from: env_from.API_KEY must name an environment variable" in message
    assert "sk-SECRET" not in message


def test_a_server_needs_exactly_one_transport() -> None:
    assert "give either command" in refused({"name": "x"})
    both = refused({"name": "x", "command": "srv", "url": "https://h/mcp", "env": {"KEY": "sk-SECRET"}})
    assert "give either command" in both
    assert "sk-SECRET" not in both
    assert "url must start with http" in refused({"name": "x", "url": "ftp://h"})
    assert "args, env and env_from are for a stdio server" in refused(
        {"name": "x", "url": "https://h", "args": ["-v"]}
    )
    assert "headers_env is for a streamable-HTTP server" in refused(
        {"name": "x", "command": "srv", "headers_env": {"A": "B"}}
    )


def test_names_allow_lists_and_limits() -> None:
    assert "mcp.servers.0.name:" in refused({"name": "a__b", "command": "srv"})
    assert "mcp.servers.0.name:" in refused({"name": "有空格 的", "command": "srv"})
    assert "more than one server is named time" in refused(
        {"name": "time", "command": "a"}, {"name": "time", "command": "b"}
    )
    assert "mcp.servers.0.allow:" in refused({"name": "x", "command": "srv", "allow": ["everyone"]})
    assert "mcp.servers.0.allow:" in refused({"name": "x", "command": "srv", "allow": [True]})
    assert "mcp.servers.0.timeout_s:" in refused({"name": "x", "command": "srv", "timeout_s": 0})
    assert "mcp.servers.0.secret:" in refused({"name": "x", "command": "srv", "secret": 1})
    assert "reconnect_min_ms must not exceed" in refused(reconnect_min_ms=5000, reconnect_max_ms=1000)
    config = parse_config(
        {
            "mcp": {
                "servers": [{"name": "t", "command": "srv", "allow": [123, "456", "private", "superusers"]}]
            }
        }
    )
    assert config.mcp.servers[0].allow == ("123", "456", "private", "superusers")
    assert config.mcp.servers[0].enabled


def test_tool_names_are_prefixed_replaced_and_cut() -> None:
    assert tool_name("time", "get_current_time") == "time__get_current_time"
    assert tool_name("web", "search.news v2") == "web__search_news_v2"
    assert tool_name("web", "查询") == "web____"
    long = tool_name("server", "t" * 100)
    assert len(long) == 64
    assert long.startswith("server__ttt")
