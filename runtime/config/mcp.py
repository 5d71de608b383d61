"""``[mcp]`` and ``[[mcp.servers]]``: tools from MCP servers, offered to the model only where allowed.

::

    [mcp]
    reconnect_min_ms = 1000      # first wait before reconnecting a server that is down; doubles ...
    reconnect_max_ms = 60000     # ... up to this
    ping_interval_ms = 15000     # how often a connected server is asked whether it is alive

    [[mcp.servers]]
    name = "time"                # tools are offered as time__<tool>
    command = "mcp-server-time"  # a stdio server, started and supervised as a child process ...
    args = ["--local-timezone=Asia/Shanghai"]
    env = {}                     # added to a minimal environment (PATH, HOME, ...), not the bot's own
    env_from = {}                # its variable -> the bot's variable holding the value (secrets)
    # url = "https://example.org/mcp"                      # ... or a streamable-HTTP server
    # headers_env = {Authorization = "GREYWIND_MCP_X_TOKEN"}   # header -> environment variable
    timeout_s = 10               # one call, hard; past it the call fails and the episode goes on
    start_timeout_s = 30         # starting it (process or HTTP session, initialise, list tools)
    enabled = true
    allow = ["private"]          # group numbers, "private" (every private chat), "superusers"
    side_effect = []             # tools to treat as changing the world, whatever they declare
    grant = []                   # tools with side effects that may be offered all the same

Deny by default: a server's tools are offered in no chat until ``allow`` names it, and a tool with
side effects (declared by its server, or listed in ``side_effect``) is offered only when ``grant``
lists it. Header values never come from this file: a literal ``headers`` table is refused, and each
``headers_env`` value must be the name of an environment variable.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from runtime.config._base import Section

# Server names become tool-name prefixes (``<server>__<tool>``) and permission names.
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
ALLOW_WORDS = frozenset({"private", "superusers"})
# The error type of a value that may be a secret: the message does not repeat the value.
SECRET_ERROR = "secret_in_config"


class McpServerConfig(Section):
    name: str
    # A stdio server: the program, its arguments and extra environment variables.
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    # More of its environment: its variable -> the bot's environment variable holding the value.
    env_from: dict[str, str] = Field(default_factory=dict)
    # A streamable-HTTP server: its endpoint, and header -> the environment variable holding its value.
    url: str | None = None
    headers_env: dict[str, str] = Field(default_factory=dict)
    # One call (and one ping) may take this long; past it the call fails.
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    # Starting the server (process or HTTP session, initialise, list tools) may take this long.
    start_timeout_s: float = Field(default=30.0, gt=0, le=600)
    enabled: bool = True
    # Group numbers, "private" (every private chat), "superusers" (superusers' private chats).
    allow: tuple[str, ...] = ()
    # Tools treated as having side effects whatever the server declares.
    side_effect: tuple[str, ...] = ()
    # Tools with side effects that are offered all the same (in the allowed chats).
    grant: tuple[str, ...] = ()
    # A result longer than this is cut (characters).
    max_result_chars: int = Field(default=4_000, ge=100, le=100_000)

    @model_validator(mode="before")
    @classmethod
    def _no_literal_headers(cls, data: Any) -> Any:
        if isinstance(data, dict) and "headers" in data:
            raise PydanticCustomError(
                SECRET_ERROR,
                "header values are never read from the config file: name the environment variable "
                'that holds each one, headers_env = {Authorization = "GREYWIND_MCP_X_TOKEN"}',
            )
        return data

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _SERVER_NAME.match(value) or "__" in value:
            raise ValueError(
                "a server name is 1-32 letters, digits, '_' or '-', starting with a letter or digit, "
                "without '__'"
            )
        return value

    @field_validator("allow", mode="before")
    @classmethod
    def _allow(cls, values: object) -> tuple[str, ...]:
        if not isinstance(values, list | tuple):
            raise ValueError('a list of group numbers, "private" or "superusers", like [123456, "private"]')
        allowed: list[str] = []
        for value in values:
            text = str(value).strip()
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError(f'a group number, "private" or "superusers" (got {value!r})')
            if not (text.isdigit() or text in ALLOW_WORDS):
                raise ValueError(f'a group number, "private" or "superusers" (got {value!r})')
            allowed.append(text)
        return tuple(dict.fromkeys(allowed))

    @field_validator("headers_env")
    @classmethod
    def _headers_env(cls, value: dict[str, str]) -> dict[str, str]:
        for header, variable in value.items():
            if not _HEADER_NAME.match(header):
                raise ValueError(f"{header!r} is not an HTTP header name")
            if not _ENV_NAME.match(variable):
                raise PydanticCustomError(
                    SECRET_ERROR,
                    f"headers_env.{header} must name an environment variable (like GREYWIND_MCP_X_TOKEN), "
                    "not hold the header's value",
                )
        return value

    @field_validator("env_from")
    @classmethod
    def _env_from(cls, value: dict[str, str]) -> dict[str, str]:
        for variable, source in value.items():
            if not _ENV_NAME.match(variable):
                raise ValueError(f"{variable!r} is not an environment variable name")
            if not _ENV_NAME.match(source):
                raise PydanticCustomError(
                    SECRET_ERROR,
                    f"env_from.{variable} must name an environment variable of the bot "
                    "(like GREYWIND_MCP_X_KEY), not hold the value",
                )
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        problem = self._transport_problem()
        if problem is not None:
            # The whole table is the input here, env values and all: the message does not repeat it.
            raise PydanticCustomError(SECRET_ERROR, f"mcp server {self.name!r}: {problem}")
        return self

    def _transport_problem(self) -> str | None:
        if (self.command is None) == (self.url is None):
            return "give either command (a stdio server) or url (a streamable-HTTP server)"
        if self.command is not None and not self.command.strip():
            return "command must not be blank"
        if self.url is not None:
            if not self.url.startswith(("http://", "https://")):
                return "url must start with http:// or https://"
            if self.args or self.env or self.env_from:
                return "args, env and env_from are for a stdio server (command)"
        if self.command is not None and self.headers_env:
            return "headers_env is for a streamable-HTTP server (url)"
        return None


class McpConfig(Section):
    servers: tuple[McpServerConfig, ...] = ()
    # A server that is down is tried again after reconnect_min_ms, doubling up to reconnect_max_ms.
    reconnect_min_ms: int = Field(default=1_000, ge=10, le=3_600_000)
    reconnect_max_ms: int = Field(default=60_000, ge=10, le=3_600_000)
    # A connected server is pinged this often; no answer within its timeout_s counts as down.
    ping_interval_ms: int = Field(default=15_000, ge=10, le=3_600_000)

    @model_validator(mode="after")
    def _consistent(self) -> McpConfig:
        if self.reconnect_min_ms > self.reconnect_max_ms:
            raise ValueError("mcp.reconnect_min_ms must not exceed mcp.reconnect_max_ms")
        names = [server.name for server in self.servers]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"mcp.servers: more than one server is named {', '.join(twice)}")
        return self
