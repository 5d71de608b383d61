"""The extension loader: built-ins, ``[extensions] modules`` and ``greywind.extensions`` entry points.

Load order is the built-in list, then the configured modules, then installed distributions' entry
points (each group in its own order), so the tools keep a stable order for the model. A name in
``disabled`` is skipped (a disabled built-in or entry point is not even imported). Each extension
gets a child of the loader's scope and an :class:`~runtime.extensions.context.ExtensionContext` on
it; :meth:`ExtensionLoader.unload` disposes that scope, and with it everything the extension
registered.

A bad extension never stops the bot: an import that fails, a value that is not an
:class:`~runtime.extensions.manifest.Extension`, a name already loaded, a config section its model
refuses (named by dotted key, ``extensions.config.<name>.<key>``), a setup that raises or outlasts
``setup_timeout_ms`` — each refuses that extension with one ``extension_refused`` log line naming it
and the stage, undoing whatever its setup had registered. Failures after loading (a listener, a task,
a tool) are isolated where they run.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup
from pydantic import ValidationError

from runtime.commands.registry import CommandRegistry
from runtime.config.extensions import ExtensionsConfig
from runtime.extensions.context import ExtensionContext, StoreReader
from runtime.extensions.listeners import MessageListeners
from runtime.extensions.manifest import Extension
from runtime.extensions.registry import ExtensionRegistry
from runtime.extensions.scope import Scope
from runtime.kernel.clock import Clock
from runtime.tools.registry import ToolRegistry

__all__ = ["ENTRY_POINT_GROUP", "ExtensionLoader", "LoadReport", "Refusal", "Source"]

log = structlog.get_logger("greywind.extensions")

ENTRY_POINT_GROUP = "greywind.extensions"


@dataclass(frozen=True, slots=True)
class Source:
    """Where an extension comes from: a ``module[:attribute]`` path, an entry point, or a value.

    ``name`` is known before import for built-ins and entry points, so a disabled one is not imported.
    """

    origin: str  # builtin | config | entry_point | direct
    target: str | EntryPoint | Extension
    name: str | None = None

    @property
    def label(self) -> str:
        target = self.target
        if isinstance(target, Extension):
            return target.name
        if isinstance(target, EntryPoint):
            return f"{target.name} ({target.value})"
        return target


@dataclass(frozen=True, slots=True)
class Refusal:
    extension: str
    stage: str  # import | declare | duplicate | config | setup
    error: str


@dataclass(slots=True)
class LoadReport:
    loaded: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


class _Refused(Exception):
    def __init__(self, stage: str, error: str) -> None:
        super().__init__(error)
        self.stage = stage


class ExtensionLoader:
    """See the module docstring."""

    def __init__(
        self,
        settings: ExtensionsConfig,
        *,
        scope: Scope,
        clock: Clock,
        tools: ToolRegistry,
        extensions: ExtensionRegistry,
        listeners: MessageListeners,
        commands: CommandRegistry | None = None,
        store: StoreReader | None = None,
        services: Mapping[object, object] | None = None,
        task_group: TaskGroup | None = None,
    ) -> None:
        self.settings = settings
        self._scope = scope
        self._clock = clock
        self._tools = tools
        self._extensions = extensions
        self._listeners = listeners
        self._commands = commands
        self._store = store
        self._services = dict(services or {})
        self._task_group = task_group
        self._loaded: dict[str, ExtensionContext] = {}

    # -- what to load -----------------------------------------------------------------------------

    def sources(self, builtins: Iterable[tuple[str, str]] = ()) -> list[Source]:
        """The built-ins (``(name, path)`` pairs), the configured modules, then the entry points."""
        found = [Source("builtin", path, name) for name, path in builtins]
        found += [Source("config", path) for path in self.settings.modules]
        if self.settings.entry_points:
            found += [Source("entry_point", ep, ep.name) for ep in entry_points(group=ENTRY_POINT_GROUP)]
        return found

    async def load_all(self, builtins: Iterable[tuple[str, str]] = ()) -> LoadReport:
        report = LoadReport()
        for source in self.sources(builtins):
            if source.name is not None and source.name in self.settings.disabled:
                report.disabled.append(source.name)
                log.info("extension_disabled", extension=source.name, origin=source.origin)
                continue
            await self.load(source, report)
        unused = sorted(set(self.settings.config) - set(self._loaded))
        if unused:
            log.warning("extension_config_unused", extensions=unused)
        log.info(
            "extensions_loaded",
            loaded=report.loaded,
            disabled=report.disabled,
            refused=[r.extension for r in report.refused],
        )
        return report

    async def load(self, source: Source | Extension, report: LoadReport | None = None) -> bool:
        """Load one extension; False (and one log line) when it is refused or disabled."""
        if isinstance(source, Extension):
            source = Source("direct", source)
        report = report if report is not None else LoadReport()
        label = source.label
        try:
            extension = self._resolve(source)
            label = extension.name
            if extension.name in self.settings.disabled:
                report.disabled.append(extension.name)
                log.info("extension_disabled", extension=extension.name, origin=source.origin)
                return False
            if extension.name in self._loaded:
                raise _Refused("duplicate", f"an extension named {extension.name!r} is already loaded")
            await self._start(extension)
        except _Refused as refused:
            report.refused.append(Refusal(label, refused.stage, str(refused)))
            log.error(
                "extension_refused",
                extension=label,
                origin=source.origin,
                stage=refused.stage,
                error=str(refused),
            )
            return False
        report.loaded.append(extension.name)
        return True

    def unload(self, name: str) -> bool:
        """Dispose everything extension ``name`` registered; False when it is not loaded."""
        context = self._loaded.pop(name, None)
        if context is None:
            return False
        failed = context.scope.dispose()
        log.info("extension_unloaded", extension=name, disposer_failures=failed)
        return True

    def loaded(self) -> list[str]:
        return list(self._loaded)

    def context(self, name: str) -> ExtensionContext | None:
        return self._loaded.get(name)

    # -- the stages -------------------------------------------------------------------------------

    def _resolve(self, source: Source) -> Extension:
        target = source.target
        try:
            if isinstance(target, Extension):
                value: Any = target
            elif isinstance(target, EntryPoint):
                value = target.load()
            else:
                module_path, _, attribute = target.partition(":")
                value = importlib.import_module(module_path)
                if attribute:
                    value = getattr(value, attribute)
        except Exception as exc:
            raise _Refused("import", f"{type(exc).__name__}: {exc}") from None
        if isinstance(value, ModuleType):
            value = getattr(value, "extension", None)
        if not isinstance(value, Extension):
            raise _Refused(
                "declare",
                f"{source.label} is not a runtime.extensions.Extension (got {type(value).__name__})",
            )
        if source.name is not None and source.origin == "entry_point" and source.name != value.name:
            raise _Refused(
                "declare", f"entry point {source.name!r} declares an extension named {value.name!r}"
            )
        return value

    def _config_of(self, extension: Extension) -> Any:
        section = self.settings.config.get(extension.name)
        if extension.config is None:
            if section:
                raise _Refused(
                    "config", f"extensions.config.{extension.name}: this extension takes no config"
                )
            return None
        try:
            return extension.config.model_validate(section or {})
        except ValidationError as exc:
            problems = []
            for err in exc.errors():
                key = ".".join(["extensions", "config", extension.name, *(str(p) for p in err["loc"])])
                if err["type"] == "extra_forbidden":
                    problems.append(f"{key}: unknown key")
                else:
                    problems.append(f"{key}: {err['msg']} (got {err.get('input')!r})")
            raise _Refused("config", "; ".join(problems)) from None

    async def _start(self, extension: Extension) -> None:
        config = self._config_of(extension)
        scope = self._scope.child(extension.name)
        context = ExtensionContext(
            extension.name,
            scope=scope,
            config=config,
            clock=self._clock,
            tools=self._tools,
            extensions=self._extensions,
            listeners=self._listeners,
            commands=self._commands,
            store=self._store,
            services=self._services,
            task_group=self._task_group,
        )
        try:
            with anyio.fail_after(self.settings.setup_timeout_ms / 1000):
                done = extension.setup(context)
                if inspect.isawaitable(done):
                    await done
        except TimeoutError:
            scope.dispose()
            raise _Refused("setup", f"setup took longer than {self.settings.setup_timeout_ms} ms") from None
        except Exception as exc:
            scope.dispose()
            raise _Refused("setup", f"{type(exc).__name__}: {exc}") from None
        self._loaded[extension.name] = context
