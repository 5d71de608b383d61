"""The extension loader over real parts: the tool, extension and command registries, the kernel's
lexicon, message listeners in a real task group, and a real SQLite store read through the context.

Loading, using and unloading an extension leaves nothing of it behind; every way an extension can be
bad is refused or isolated with one log line naming it, and the others keep working.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from runtime.commands import CommandCall, admin_registry
from runtime.config.extensions import ExtensionsConfig
from runtime.extensions import ExtensionRegistry, Scope
from runtime.extensions.context import ReadOnlyStore
from runtime.extensions.listeners import MessageListeners
from runtime.extensions.loader import ENTRY_POINT_GROUP, ExtensionLoader, Source
from runtime.kernel.clock import ManualClock
from runtime.kernel.lexicon import DynamicLexicon
from runtime.kernel.lexicon.terms import GLOBAL_KEY, LexiconKey, LexiconScope
from runtime.store.sqlite.store import SqliteStore
from runtime.tools import ToolContext, ToolRegistry
from tests.extensions.conftest import said
from tests.extensions.samples.good import Seen

pytestmark = pytest.mark.anyio

SAMPLES = "tests.extensions.samples"


@dataclass
class Host:
    loader: ExtensionLoader
    scope: Scope
    tools: ToolRegistry
    registry: ExtensionRegistry
    listeners: MessageListeners
    commands: Any
    lexicon: DynamicLexicon
    store: SqliteStore


@asynccontextmanager
async def hosting(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon, **settings: Any
) -> AsyncIterator[Host]:
    tools = ToolRegistry(default_timeout=0.5)
    registry = ExtensionRegistry(tools, clock=clock, lexicon=lexicon)
    listeners = MessageListeners(timeout=settings.pop("listener_timeout", 0.2))
    commands = admin_registry()
    scope = Scope("test")
    store = await SqliteStore.open(tmp_path / "store.sqlite3")
    try:
        async with anyio.create_task_group() as tg:
            listeners.start(tg)
            loader = ExtensionLoader(
                ExtensionsConfig.model_validate({"entry_points": False, **settings}),
                scope=scope,
                clock=clock,
                tools=tools,
                extensions=registry,
                listeners=listeners,
                commands=commands,
                store=ReadOnlyStore(store),
                task_group=tg,
            )
            yield Host(loader, scope, tools, registry, listeners, commands, lexicon, store)
            scope.dispose()
            tg.cancel_scope.cancel()
    finally:
        await store.close()


def refusals(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == "extension_refused"]


async def wait_for(condition: Any, seconds: float = 2.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():  # noqa: ASYNC110 - the conditions are plain values, not events
            await anyio.sleep(0.01)


def tool_context(chat: str = "group:1") -> ToolContext:
    return ToolContext(chat_id=chat, user_id="7", now=0.0)


@pytest.fixture(autouse=True)
def _fresh_probe() -> None:
    Seen.messages = []
    Seen.task_started = Seen.task_cancelled = False
    Seen.config = None


async def test_load_use_unload_leaves_nothing_behind(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon
) -> None:
    settings = {"config": {"everything": {"greeting": "嗨"}}}
    async with hosting(tmp_path, clock, lexicon, **settings) as host:
        tools_before = [spec.name for spec in host.tools.list()]
        commands_before = [spec.name for spec in host.commands.specs()]
        assert await host.loader.load(Source("config", f"{SAMPLES}.good:everything"))
        await wait_for(lambda: Seen.task_started)

        # Used: the tool, the game's move, the terms, the listener, the command, the config.
        hello = await host.tools.invoke("everything_hello", {}, tool_context())
        assert hello.ok
        assert hello.content == "嗨，group:1"
        assert (await host.tools.invoke("everything_game_move", {}, tool_context())).content == "moved"
        assert [t.text for t in lexicon.terms(GLOBAL_KEY)] == ["万物理论"]
        assert [t.text for t in lexicon.terms(LexiconKey(LexiconScope.GAME, "everything_game"))] == ["走一步"]
        host.listeners.notify(said(clock, text="有人吗"))
        await wait_for(lambda: Seen.messages == ["有人吗"])
        command = host.commands.parse("/everything 掷 骰子", chat_id="group:1", superuser=False)
        call = CommandCall(control=None, now=0.0, by="7", origin="group:1")  # type: ignore[arg-type]
        assert await host.commands.dispatch(command, call) == "嗨 掷 骰子"
        assert host.registry.statistics().life_sources == 1

        assert host.loader.unload("everything")

        assert [spec.name for spec in host.tools.list()] == tools_before
        assert [spec.name for spec in host.commands.specs()] == commands_before
        assert host.commands.parse("/everything x", chat_id="group:1", superuser=True) is None
        assert host.registry.entries() == []
        assert host.registry.statistics().terms == 0
        assert list(lexicon.terms(GLOBAL_KEY)) == []
        assert len(host.listeners) == 0
        await wait_for(lambda: Seen.task_cancelled)
        host.listeners.notify(said(clock, text="还在吗"))
        await anyio.sleep(0.05)
        assert Seen.messages == ["有人吗"]
        assert host.loader.loaded() == []
        assert host.scope.statistics().live == 0


async def test_a_module_path_loads_its_extension_attribute(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon
) -> None:
    async with hosting(tmp_path, clock, lexicon, modules=[f"{SAMPLES}.good"]) as host:
        report = await host.loader.load_all()
        assert report.loaded == ["quiet"]
        assert "quiet_tool" in host.tools


async def test_the_context_reads_the_store(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon
) -> None:
    from runtime.extensions.manifest import Extension
    from runtime.store.records import StoredMessage

    async with hosting(tmp_path, clock, lexicon) as host:
        await host.store.append_messages([StoredMessage.from_chat_message(said(clock, text="存下来的话"))])
        found: list[str] = []

        async def setup(ctx: Any) -> None:
            found.extend(m.text for m in await ctx.store.recent_messages("group:1"))
            assert not hasattr(ctx.store, "append_messages")

        assert await host.loader.load(Extension("reader", setup))
        assert found == ["存下来的话"]


@pytest.mark.parametrize(
    ("path", "stage", "words"),
    [
        (f"{SAMPLES}.no_such_module", "import", "ModuleNotFoundError"),
        (f"{SAMPLES}.broken_import", "import", "broken on purpose"),
        (f"{SAMPLES}.bad:no_such_attribute", "import", "AttributeError"),
        (f"{SAMPLES}.bad:not_an_extension", "declare", "not a runtime.extensions.Extension"),
        (f"{SAMPLES}.bad:raising_setup", "setup", "setup fell over"),
        (f"{SAMPLES}.bad:slow_setup", "setup", "longer than 100 ms"),
    ],
)
async def test_a_bad_extension_is_refused_with_one_line_and_the_rest_load(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon, path: str, stage: str, words: str
) -> None:
    modules = [path, f"{SAMPLES}.good:quiet"]
    async with hosting(tmp_path, clock, lexicon, modules=modules, setup_timeout_ms=100) as host:
        with capture_logs() as logs:
            report = await host.loader.load_all()
        assert report.loaded == ["quiet"]
        (line,) = refusals(logs)
        assert line["stage"] == stage
        assert words in line["error"]
        assert line["extension"] in (path, path.rsplit(":", 1)[-1])
        # Nothing of a half-done setup is left: only the good extension's tool is there.
        assert [spec.name for spec in host.tools.list()] == ["quiet_tool"]
        assert host.loader.loaded() == ["quiet"]


async def test_a_bad_config_section_is_refused_naming_the_dotted_key(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon
) -> None:
    settings = {
        "modules": [f"{SAMPLES}.good:everything", f"{SAMPLES}.good:quiet"],
        "config": {"everything": {"sides": 1, "colour": "red"}, "quiet": {}},
    }
    async with hosting(tmp_path, clock, lexicon, **settings) as host:
        with capture_logs() as logs:
            report = await host.loader.load_all()
        assert report.loaded == ["quiet"]
        (line,) = refusals(logs)
        assert line["extension"] == "everything"
        assert line["stage"] == "config"
        assert "extensions.config.everything.sides" in line["error"]
        assert "extensions.config.everything.colour: unknown key" in line["error"]
        assert "everything_hello" not in host.tools


async def test_a_config_section_for_an_extension_without_config_is_refused(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon
) -> None:
    settings = {"modules": [f"{SAMPLES}.good:quiet"], "config": {"quiet": {"loud": True}}}
    async with hosting(tmp_path, clock, lexicon, **settings) as host:
        with capture_logs() as logs:
            report = await host.loader.load_all()
        assert report.loaded == []
        assert "extensions.config.quiet" in refusals(logs)[0]["error"]


async def test_a_name_loaded_twice_is_refused(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon
) -> None:
    modules = [f"{SAMPLES}.good:quiet", f"{SAMPLES}.good"]
    async with hosting(tmp_path, clock, lexicon, modules=modules) as host:
        with capture_logs() as logs:
            report = await host.loader.load_all()
        assert report.loaded == ["quiet"]
        assert [line["stage"] for line in refusals(logs)] == ["duplicate"]


async def test_disabled_extensions_are_not_loaded_and_disabled_entry_points_not_imported(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon, monkeypatch: pytest.MonkeyPatch
) -> None:
    points = [
        EntryPoint("broken", f"{SAMPLES}.no_such_module:extension", ENTRY_POINT_GROUP),
        EntryPoint("everything", f"{SAMPLES}.good:everything", ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr("runtime.extensions.loader.entry_points", lambda group: points)
    settings = {"entry_points": True, "modules": [f"{SAMPLES}.good:quiet"], "disabled": ["quiet", "broken"]}
    async with hosting(tmp_path, clock, lexicon, **settings) as host:
        host.loader.settings = host.loader.settings.model_copy(update={"entry_points": True})
        with capture_logs() as logs:
            report = await host.loader.load_all()
        assert report.loaded == ["everything"]
        assert sorted(report.disabled) == ["broken", "quiet"]
        assert refusals(logs) == []
        assert "quiet_tool" not in host.tools


async def test_an_entry_point_must_declare_the_name_it_is_published_under(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon, monkeypatch: pytest.MonkeyPatch
) -> None:
    points = [EntryPoint("dice", f"{SAMPLES}.good:quiet", ENTRY_POINT_GROUP)]
    monkeypatch.setattr("runtime.extensions.loader.entry_points", lambda group: points)
    async with hosting(tmp_path, clock, lexicon) as host:
        host.loader.settings = host.loader.settings.model_copy(update={"entry_points": True})
        with capture_logs() as logs:
            report = await host.loader.load_all()
        assert report.loaded == []
        assert refusals(logs)[0]["stage"] == "declare"


@pytest.mark.parametrize(
    ("bad", "event"),
    [("raising_listener", "listener_failed"), ("hanging_listener", "listener_slow")],
)
async def test_a_bad_listener_is_logged_and_the_others_still_hear_every_message(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon, bad: str, event: str
) -> None:
    modules = [f"{SAMPLES}.bad:{bad}", f"{SAMPLES}.good:everything"]
    async with hosting(tmp_path, clock, lexicon, modules=modules, listener_timeout=0.05) as host:
        assert (await host.loader.load_all()).loaded == [bad, "everything"]
        with capture_logs() as logs:
            for text in ("一", "二", "三"):
                host.listeners.notify(said(clock, text=text))
            await wait_for(lambda: Seen.messages == ["一", "二", "三"])
            await wait_for(lambda: len([e for e in logs if e["event"] == event]) == 3)
        lines = [e for e in logs if e["event"] == event]
        assert {line["extension"] for line in lines} == {bad}
        stats = host.listeners.statistics()
        assert stats.failed + stats.timed_out == 3


async def test_a_blocking_listener_does_not_hold_the_event_loop(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon
) -> None:
    from tests.extensions.samples import bad

    bad.blocking_calls.clear()
    async with hosting(
        tmp_path, clock, lexicon, modules=[f"{SAMPLES}.bad:blocking_listener"], listener_timeout=0.05
    ) as host:
        await host.loader.load_all()
        started = time.perf_counter()
        for text in ("一", "二", "三"):
            host.listeners.notify(said(clock, text=text))
        # The loop keeps turning while the listener sleeps in its thread ...
        for _ in range(20):
            await anyio.sleep(0.01)
        assert time.perf_counter() - started < 0.4
        await wait_for(lambda: host.listeners.statistics().timed_out == 3)
        # ... and a stuck listener holds one thread: the messages behind it are skipped, not piled up.
        assert bad.blocking_calls == ["一"]


async def test_a_raising_task_is_logged_and_ends_alone(
    tmp_path: Path, clock: ManualClock, lexicon: DynamicLexicon
) -> None:
    modules = [f"{SAMPLES}.bad:raising_task", f"{SAMPLES}.good:everything"]
    async with hosting(tmp_path, clock, lexicon, modules=modules) as host:
        with capture_logs() as logs:
            await host.loader.load_all()
            await wait_for(lambda: any(e["event"] == "extension_task_failed" for e in logs))
        failed = next(e for e in logs if e["event"] == "extension_task_failed")
        assert failed["extension"] == "raising_task"
        assert host.loader.context("raising_task").tasks == 0  # type: ignore[union-attr]
        assert host.loader.context("everything").tasks == 1  # type: ignore[union-attr]
