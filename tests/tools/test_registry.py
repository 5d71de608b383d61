"""ToolRegistry (design/0002 §10): registration, permissions, unknown tool, bad arguments, timeout,
exceptions and oversized results all come back as results the model can act on."""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel, Field

from runtime.tools import (
    DuplicateToolError,
    ToolContext,
    ToolErrorKind,
    ToolRegistry,
    ToolSpec,
    ToolSpecError,
)

CTX = ToolContext(chat_id="group:1", user_id="42", permissions=frozenset({"chat"}))


class AddArgs(BaseModel):
    a: int
    b: int = Field(default=0, ge=0)


def add_tool(**overrides: object) -> ToolSpec:
    fields: dict[str, object] = {
        "name": "add",
        "description": "Add two integers.",
        "execute": lambda args, ctx: args.a + args.b,
        "args_model": AddArgs,
    }
    fields.update(overrides)
    return ToolSpec(**fields)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_registered_tool_is_listed_and_invoked() -> None:
    tools = ToolRegistry()
    tools.register(add_tool())
    assert [s.name for s in tools.list()] == ["add"]
    result = await tools.invoke("add", {"a": 2, "b": 3}, CTX)
    assert result.ok
    assert result.content == "5"


@pytest.mark.asyncio
async def test_disposer_unregisters_and_is_idempotent() -> None:
    tools = ToolRegistry()
    dispose = tools.register(add_tool())
    dispose()
    dispose()
    assert "add" not in tools
    result = await tools.invoke("add", {"a": 1}, CTX)
    assert result.error is ToolErrorKind.UNKNOWN_TOOL


def test_stale_disposer_leaves_a_newer_registration_alone() -> None:
    tools = ToolRegistry()
    old = tools.register(add_tool())
    assert tools.unregister("add")
    newer = add_tool(description="Add, version two.")
    tools.register(newer)
    old()
    assert tools.get("add") is newer


def test_duplicate_and_reserved_names_are_refused() -> None:
    tools = ToolRegistry()
    tools.register(add_tool())
    with pytest.raises(DuplicateToolError):
        tools.register(add_tool())
    for name in ("reply", "wait", "observe", "expire", "bad name", "x" * 65):
        with pytest.raises(ToolSpecError):
            add_tool(name=name)


@pytest.mark.asyncio
async def test_unknown_tool_names_the_available_ones() -> None:
    tools = ToolRegistry()
    tools.register(add_tool())
    result = await tools.invoke("ad", {}, CTX)
    assert not result.ok
    assert result.error is ToolErrorKind.UNKNOWN_TOOL
    assert "add" in result.message
    assert "ad" in result.observation_text()


@pytest.mark.asyncio
async def test_permissions_filter_the_list_and_refuse_the_call() -> None:
    tools = ToolRegistry()
    tools.register(add_tool())
    tools.register(
        add_tool(name="ban", description="Ban a member.", permissions=frozenset({"admin"}), side_effect=True)
    )
    assert [s.name for s in tools.list({"chat"})] == ["add"]
    assert [s.name for s in tools.list({"chat", "admin"})] == ["add", "ban"]
    assert [s["function"]["name"] for s in tools.openai_schemas({"chat"})] == ["add"]
    result = await tools.invoke("ban", {"a": 1}, CTX)
    assert result.error is ToolErrorKind.PERMISSION_DENIED
    assert "admin" in result.message
    assert result.side_effect


@pytest.mark.asyncio
async def test_invalid_arguments_say_what_to_fix() -> None:
    tools = ToolRegistry()
    tools.register(add_tool())
    missing = await tools.invoke("add", {"b": 1}, CTX)
    assert missing.error is ToolErrorKind.INVALID_ARGUMENTS
    assert "a: required but missing" in missing.message
    wrong = await tools.invoke("add", {"a": "seven", "b": -1}, CTX)
    assert "a:" in wrong.message
    assert "b:" in wrong.message
    not_object = await tools.invoke("add", [1, 2], CTX)
    assert "JSON object" in not_object.message
    bad_json = await tools.invoke("add", "{a: 1", CTX)
    assert "not valid JSON" in bad_json.message
    from_json = await tools.invoke("add", '{"a": 4}', CTX)
    assert from_json.content == "4"


@pytest.mark.asyncio
async def test_plain_json_schema_tools_are_checked_too() -> None:
    tools = ToolRegistry()
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 1}, "days": {"type": "integer", "maximum": 7}},
        "required": ["city"],
        "additionalProperties": False,
    }
    tools.register(
        ToolSpec(
            name="weather",
            description="Forecast.",
            parameters=schema,
            execute=lambda args, ctx: {"city": args["city"], "sky": "晴"},
        )
    )
    ok = await tools.invoke("weather", {"city": "杭州"}, CTX)
    assert ok.content == '{"city": "杭州", "sky": "晴"}'
    bad = await tools.invoke("weather", {"days": 9, "when": "now"}, CTX)
    assert bad.error is ToolErrorKind.INVALID_ARGUMENTS
    assert "city: required but missing" in bad.message
    assert "days: must be <= 7" in bad.message
    assert "when: unknown argument" in bad.message
    with pytest.raises(ToolSpecError):
        ToolSpec(name="x", description="x", parameters={"type": "array"}, execute=lambda a, c: None)


@pytest.mark.asyncio
async def test_hanging_tool_times_out() -> None:
    async def hang(args: object, ctx: ToolContext) -> str:
        await anyio.sleep(30)
        return "never"

    tools = ToolRegistry()
    tools.register(ToolSpec(name="hang", description="Hangs.", execute=hang, timeout=0.05))
    with anyio.fail_after(5):
        result = await tools.invoke("hang", {}, CTX)
    assert result.error is ToolErrorKind.TIMEOUT
    assert tools.statistics().timeouts == 1


@pytest.mark.asyncio
async def test_raising_tool_is_a_failure_not_a_crash() -> None:
    def boom(args: object, ctx: ToolContext) -> str:
        raise RuntimeError("disk on fire")

    tools = ToolRegistry()
    tools.register(ToolSpec(name="boom", description="Raises.", execute=boom))
    result = await tools.invoke("boom", {}, CTX)
    assert result.error is ToolErrorKind.EXCEPTION
    assert "RuntimeError" in result.message
    assert "disk on fire" in result.message


@pytest.mark.asyncio
async def test_ten_megabyte_result_is_truncated_with_its_full_size() -> None:
    tools = ToolRegistry(max_result_chars=1_000)
    tools.register(ToolSpec(name="big", description="Big.", execute=lambda a, c: "x" * 10_000_000))
    tools.register(
        ToolSpec(name="small_cap", description="Capped.", max_result_chars=10, execute=lambda a, c: "y" * 11)
    )
    result = await tools.invoke("big", {}, CTX)
    assert result.ok
    assert result.truncated
    assert result.full_size == 10_000_000
    assert len(result.content) < 1_100
    assert "10000000" in result.content
    capped = await tools.invoke("small_cap", {}, CTX)
    assert capped.content.startswith("y" * 10 + "\n[truncated")


@pytest.mark.asyncio
async def test_tool_receives_its_context() -> None:
    seen: list[ToolContext] = []
    tools = ToolRegistry()
    tools.register(ToolSpec(name="who", description="Who.", execute=lambda a, c: seen.append(c)))
    await tools.invoke("who", None, CTX)
    assert seen == [CTX]


def test_openai_schema_shape() -> None:
    schema = add_tool().openai_schema()
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "add"
    assert fn["parameters"]["type"] == "object"
    assert set(fn["parameters"]["properties"]) == {"a", "b"}
    assert fn["parameters"]["required"] == ["a"]
    no_args = ToolSpec(name="ping", description="Ping.", execute=lambda a, c: "pong").openai_schema()
    assert no_args["function"]["parameters"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_a_models_schema_is_pydantics_without_the_title_and_each_caller_has_its_own_copy() -> None:
    expected = AddArgs.model_json_schema()
    expected.pop("title")
    first = add_tool().json_schema()
    assert first == expected
    first["properties"]["a"]["type"] = "string"  # a caller editing what it was given
    first["required"].append("c")
    assert add_tool().json_schema() == expected
    assert add_tool().openai_schema()["function"]["parameters"] == expected


@pytest.mark.asyncio
async def test_statistics_count_outcomes() -> None:
    tools = ToolRegistry()
    tools.register(add_tool())
    await tools.invoke("add", {"a": 1}, CTX)
    await tools.invoke("nope", {}, CTX)
    await tools.invoke("add", {}, CTX)
    stats = tools.statistics()
    assert (stats.tools, stats.invocations, stats.succeeded, stats.failed) == (1, 3, 1, 2)
    assert dict(stats.failures_by_kind) == {"invalid_arguments": 1, "unknown_tool": 1}
