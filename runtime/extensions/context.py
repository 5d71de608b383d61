"""What an extension's setup receives: its scope, its config, and the ways to register things.

Every ``ExtensionContext`` method that adds something (a tool, a game, an activity, a life source,
lexicon terms, a message listener, a command, a background task) gives its disposer to the
extension's own scope, so unloading the extension — or a setup that raises half-way — removes all of
it, newest first. What an extension may read is narrow on purpose: the clock, its validated config
section, and the store through :class:`StoreReader` (a read-only view; writing stays the runtime's).
Built-in extensions that need more of the runtime ask for a service by its type
(:meth:`ExtensionContext.service`); a service the host does not offer is a refusal at setup.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, cast

import anyio
import structlog
from anyio.abc import TaskGroup
from pydantic import BaseModel

from runtime.commands.registry import CommandRegistry
from runtime.commands.spec import CommandSpec
from runtime.extensions.errors import ExtensionError
from runtime.extensions.listeners import Listener, MessageListeners
from runtime.extensions.registry import ExtensionRegistry
from runtime.extensions.scope import Disposer, Scope
from runtime.extensions.spec import ActivitySpec, GameSpec, LifeSourceSpec
from runtime.kernel.clock import Clock
from runtime.kernel.lexicon.terms import GLOBAL_KEY, LexiconKey
from runtime.store.protocol import MemoryScope
from runtime.store.records import MemoryHit, MessageHit, StoredMessage, TopicThread
from runtime.tools.registry import ToolRegistry
from runtime.tools.spec import ToolSpec

__all__ = ["ExtensionContext", "ReadOnlyStore", "StoreReader"]

log = structlog.get_logger("greywind.extensions")

T = TypeVar("T")


class StoreReader(Protocol):
    """The store as extensions see it: messages, memories and topic threads, read only."""

    async def get_messages(self, chat_id: str, message_ids: Sequence[str]) -> list[StoredMessage]: ...

    async def recent_messages(
        self, chat_id: str, *, limit: int = 50, before: float | None = None
    ) -> list[StoredMessage]: ...

    async def search_messages(
        self,
        query: str,
        *,
        chat_ids: Collection[str],
        limit: int = 10,
        topic_thread_id: str | None = None,
        include_recalled: bool = False,
        newest: int | None = None,
    ) -> list[MessageHit]: ...

    async def search_memories(
        self, query: str, *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[MemoryHit]: ...

    async def get_topic_thread(self, thread_id: str) -> TopicThread | None: ...


class ReadOnlyStore:
    """A :class:`StoreReader` over a full store: only the reading methods are reachable through it."""

    __slots__ = ("_store",)

    def __init__(self, store: StoreReader) -> None:
        self._store = store

    async def get_messages(self, chat_id: str, message_ids: Sequence[str]) -> list[StoredMessage]:
        return await self._store.get_messages(chat_id, message_ids)

    async def recent_messages(
        self, chat_id: str, *, limit: int = 50, before: float | None = None
    ) -> list[StoredMessage]:
        return await self._store.recent_messages(chat_id, limit=limit, before=before)

    async def search_messages(
        self,
        query: str,
        *,
        chat_ids: Collection[str],
        limit: int = 10,
        topic_thread_id: str | None = None,
        include_recalled: bool = False,
        newest: int | None = None,
    ) -> list[MessageHit]:
        return await self._store.search_messages(
            query,
            chat_ids=chat_ids,
            limit=limit,
            topic_thread_id=topic_thread_id,
            include_recalled=include_recalled,
            newest=newest,
        )

    async def search_memories(
        self, query: str, *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[MemoryHit]:
        return await self._store.search_memories(query, scopes=scopes, limit=limit)

    async def get_topic_thread(self, thread_id: str) -> TopicThread | None:
        return await self._store.get_topic_thread(thread_id)


class ExtensionContext:
    """See the module docstring; one per loaded extension."""

    def __init__(
        self,
        name: str,
        *,
        scope: Scope,
        config: BaseModel | None,
        clock: Clock,
        tools: ToolRegistry,
        extensions: ExtensionRegistry,
        listeners: MessageListeners,
        commands: CommandRegistry | None,
        store: StoreReader | None,
        services: Mapping[object, object],
        task_group: TaskGroup | None,
    ) -> None:
        self.name = name
        self.scope = scope
        self.config = config
        self.clock = clock
        self._tools = tools
        self._extensions = extensions
        self._listeners = listeners
        self._commands = commands
        self._store = store
        self._services = services
        self._task_group = task_group
        self._tasks = 0

    # -- reading ----------------------------------------------------------------------------------

    @property
    def store(self) -> StoreReader:
        if self._store is None:
            raise ExtensionError(f"extension {self.name!r}: no store is open")
        return self._store

    def service(self, kind: Callable[..., T]) -> T:
        """The host's service of type ``kind`` (built-ins use these); LookupError if none."""
        found = self._services.get(kind)
        if found is None:
            raise LookupError(
                f"extension {self.name!r} needs {getattr(kind, '__name__', kind)}, "
                "which this host does not offer"
            )
        return cast("T", found)

    @property
    def tasks(self) -> int:
        """Background tasks of this extension still running."""
        return self._tasks

    # -- registering ------------------------------------------------------------------------------

    def tool(self, spec: ToolSpec) -> Callable[[], None]:
        return self.scope.add(self._tools.register(spec))

    def game(self, spec: GameSpec) -> Disposer:
        return self._extensions.register_game(self.scope, spec)

    def activity(self, spec: ActivitySpec) -> Disposer:
        return self._extensions.register_activity(self.scope, spec)

    def life_source(self, spec: LifeSourceSpec) -> Disposer:
        return self._extensions.register_life_source(self.scope, spec)

    def terms(self, texts: Iterable[str], *, key: LexiconKey = GLOBAL_KEY) -> Disposer:
        """Pinned lexicon terms (by default matched in every chat), removed when the extension goes."""
        owned = self.scope.child("terms")
        self._extensions.add_terms(owned, key, texts, f"extension:{self.name}")
        return owned.dispose

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Hear every incoming message (not the bot's own), off the message's path."""
        return self.scope.add(self._listeners.add(self.name, listener))

    def command(self, spec: CommandSpec) -> Callable[[], None]:
        if self._commands is None:
            raise ExtensionError(f"extension {self.name!r}: this host takes no commands")
        return self.scope.add(self._commands.register(spec))

    def spawn(self, name: str, work: Callable[[], Awaitable[Any]]) -> Callable[[], None]:
        """Run ``work`` in the bot's task group until it returns or the extension is unloaded; a task
        that raises is logged (naming the extension) and ends alone."""
        if self._task_group is None:
            raise ExtensionError(f"extension {self.name!r}: background tasks need a running bot")
        cancel = anyio.CancelScope()

        async def run() -> None:
            self._tasks += 1
            try:
                with cancel:
                    await work()
            except Exception as exc:
                log.warning("extension_task_failed", extension=self.name, task=name, error=repr(exc))
            finally:
                self._tasks -= 1

        handle = self.scope.add(cancel.cancel)
        self._task_group.start_soon(run, name=f"extension-{self.name}-{name}")
        return handle
