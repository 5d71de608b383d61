"""``PostgresStore``: the Protocol on one PostgreSQL database, shared by several bot processes.

Open it with :meth:`PostgresStore.open` (the ``postgresql`` backend does, from the DSN in the
environment variable ``[store] dsn_env`` names). It brings the schema up to date
(:mod:`runtime.store.postgres.schema`), then takes the leases of the accounts this process serves
(:mod:`runtime.store.postgres.lease`): a second process for one of them is refused with
``StoreLeaseError`` before it has written anything.

Several processes, one database: each serves its own accounts, and the chat keys carry the account
(``qq:<account>:group:<id>``), so their rows never collide. What a process restores on start
(``load_runtime_state``) is its own accounts' only: another process's events, reminders, speeches and
sessions stay with that process.

Several accounts in one process: each listed account's runtime stack opens its own store on its own
schema (``schema=``, :func:`~runtime.store.postgres.schema.account_schema`), because several tables
(the global lexicon, profiles, memories, topic threads) are not keyed by account; the leases stay in
the home schema's table, where every process sees them.

Durability: a committed transaction is on the server; what the writer task had queued is lost on
``kill -9`` of the bot, as with SQLite (at most about one flush interval).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Collection, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from runtime.config.store import StoreConfig
from runtime.kernel.message import ChatKey
from runtime.store.errors import StoreError, StoreLeaseError
from runtime.store.postgres import lease as lease_
from runtime.store.postgres.base import cleaned, log, pg
from runtime.store.postgres.schema import migrate, quoted
from runtime.store.postgres.search import text_match, vectors
from runtime.store.postgres.tables import ContextTables, LayerTables
from runtime.store.protocol import DEFAULT_RESTORE, RestorePolicy
from runtime.store.records import (
    DUPLICATE_WINDOW,
    ActivationDone,
    EventRecord,
    LexiconTermRecord,
    MessageHit,
    MessageRecalled,
    RuntimeState,
    ScheduledActivation,
    SpeechRecord,
    StoredMessage,
    ToolCallRecord,
    TopicLink,
    WriteItem,
)
from runtime.store.restore import load_runtime_state
from runtime.store.sql import rows as r_
from runtime.store.sql import statements as q
from runtime.store.sql.log import LogQueries
from runtime.store.sql.statements import placeholders
from runtime.store.text import IndexedText, index_text, parse_query, warm_up

__all__ = ["PostgresStore", "redacted"]

_COLUMN_TYPES = (
    "text, text, text, text, float8, text, text, text, int8, int8, text, text, int8, tsvector, tsvector"
)
_CASTS = ", ".join(f"?::{kind.strip()}" for kind in _COLUMN_TYPES.split(","))
# A message is a new row unless the same delivery is already stored (records.same_delivery).
_MESSAGE_INSERT = pg(
    f"INSERT INTO messages ({r_.MESSAGE_COLUMNS}, words, chars) SELECT {_CASTS} "
    "WHERE NOT EXISTS (SELECT 1 FROM messages WHERE chat_id = ?::text AND message_id = ?::text "
    "AND time BETWEEN ?::float8 AND ?::float8 "
    "AND ((?::int8 = 1 AND from_self <> 0) OR (?::int8 = 0 AND sender_id = ?::text AND text = ?::text))) "
    "RETURNING seq"
)
# Statements run on a pooled connection directly (the writer's batch), numbered once here.
_EVENT_UPSERT = pg(q.EVENT_UPSERT)
_ACTIVATION_UPSERT = pg(q.ACTIVATION_UPSERT)
_ACTIVATION_DELETE = pg(q.ACTIVATION_DELETE)
_TERM_UPSERT = pg(q.TERM_UPSERT)
_SPEECH_INSERT = pg(q.SPEECH_INSERT)
_RECALL = pg(q.RECALL)
_LINK = pg(q.LINK)
_TOOL_CALL_UPSERT = pg(q.TOOL_CALL_UPSERT)


def redacted(dsn: str) -> str:
    """The DSN without its password, for logs and error messages."""
    try:
        parts = urlsplit(dsn)
    except ValueError:
        return "postgresql://?"
    if parts.password is None:
        return dsn
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


async def _home_leases(dsn: str, where: str) -> str:
    """The home schema's leases table, schema-qualified, once that schema is migrated (the leases of
    every schema's stores are there)."""
    try:
        connection = await asyncpg.connect(dsn, timeout=10)
    except (TimeoutError, asyncpg.PostgresError, OSError, ValueError) as exc:
        raise StoreError(f"cannot connect to the PostgreSQL database {where}: {exc}") from exc
    try:
        home = await connection.fetchval("SELECT current_schema()")
        if home is None:
            raise StoreError(f"the DSN's search_path names no schema that exists ({where})")
        await migrate(connection, where)
    finally:
        await connection.close()
    return f"{quoted(str(home))}.leases"


def message_params(item: StoredMessage, indexed: IndexedText) -> tuple[Any, ...]:
    row = r_.message_row(item, indexed)
    words, chars = vectors(indexed)
    window = (item.time - DUPLICATE_WINDOW, item.time + DUPLICATE_WINDOW)
    mine = int(item.from_self)
    return (
        *row[:13],
        words,
        chars,
        item.chat_id,
        item.message_id,
        *window,
        mine,
        mine,
        item.sender_id,
        item.text,
    )


def _statements(item: WriteItem, indexed: Iterator[IndexedText]) -> tuple[str, list[tuple[Any, ...]]]:
    if isinstance(item, StoredMessage):
        return _MESSAGE_INSERT, [message_params(item, next(indexed))]
    if isinstance(item, MessageRecalled):
        return _RECALL, [(item.chat_id, item.message_id)]
    if isinstance(item, TopicLink):
        return _LINK, [(item.topic_thread_id, item.chat_id, mid) for mid in item.message_ids]
    if isinstance(item, SpeechRecord):
        return _SPEECH_INSERT, [r_.speech_row(item)]
    if isinstance(item, EventRecord):
        return _EVENT_UPSERT, [r_.event_row(item)]
    if isinstance(item, ScheduledActivation):
        return _ACTIVATION_UPSERT, [r_.activation_row(item)]
    if isinstance(item, ActivationDone):
        return _ACTIVATION_DELETE, [(item.event_id,)]
    if isinstance(item, ToolCallRecord):
        return _TOOL_CALL_UPSERT, [r_.tool_call_row(item)]
    raise TypeError(f"not a write item: {item!r}")


class PostgresStore(ContextTables, LayerTables, LogQueries):
    """PostgreSQL backend of :class:`runtime.store.protocol.Store`. Create it with :meth:`open`."""

    backend = "postgresql"
    tables_sql = (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
        "AND table_type = 'BASE TABLE' ORDER BY table_name"
    )
    _leases: lease_.Leases | None = None
    _owns_none = False

    @classmethod
    async def open(
        cls,
        dsn: str,
        *,
        config: StoreConfig | None = None,
        accounts: Sequence[str] | None = None,
        schema: str | None = None,
        lease: bool = True,
    ) -> PostgresStore:
        """Connect, migrate, and lease ``accounts`` (default: ``config.lease_accounts``; none given:
        the whole database, ``*``). ``schema``: the schema holding the tables (None: the DSN's own,
        the home schema), created and migrated here; the leases stay in the home schema's table.
        ``lease=False`` leases nothing, and then the store restores no chat (it owns none). Raises
        ``StoreError`` (``StoreLeaseError`` when another live process holds one of the leases,
        ``SchemaTooNewError``, ``MigrationError``)."""
        config = config or StoreConfig()
        where = redacted(dsn) + (f" (schema {schema})" if schema else "")
        # jieba's dictionary loads here, off the event loop, not inside the first search.
        await asyncio.to_thread(warm_up)
        table = "leases"
        settings = {"lock_timeout": str(int(config.write_wait_ms))}
        if schema is not None:
            table = await _home_leases(dsn, where)
            # A startup parameter, not a SET: the pool's reset on release (RESET ALL) keeps it.
            settings["search_path"] = quoted(schema)
        try:
            pool = await asyncpg.create_pool(
                dsn,
                min_size=1,
                max_size=config.pool_size,
                command_timeout=60,
                timeout=10,
                # A write waits this long for a row lock, then fails (StoreLockedError).
                server_settings=settings,
            )
        except (TimeoutError, asyncpg.PostgresError, OSError, ValueError) as exc:
            raise StoreError(f"cannot connect to the PostgreSQL database {where}: {exc}") from exc
        names: tuple[str, ...] = ()
        leases: lease_.Leases | None = None
        try:
            async with pool.acquire() as connection:
                version = await migrate(connection, where, schema)
            if lease:
                names = tuple(accounts if accounts is not None else config.lease_accounts) or (lease_.WHOLE,)
                leases = await lease_.Leases.take(pool, names, ttl=config.lease_ttl_ms / 1000, table=table)
        except BaseException:
            await pool.close()
            raise
        store = cls(pool, where, config, version)
        store._leases = leases
        store._owns_none = not lease
        if leases is not None:
            leases.on_lost(store._lost)
        store._message_count = await store.count_messages()
        log.info(
            "store.opened",
            backend="postgresql",
            database=where,
            schema_version=version,
            messages=store._message_count,
            leases=list(names),
        )
        return store

    @contextlib.asynccontextmanager
    async def transaction(self, what: str) -> AsyncIterator[asyncpg.Connection]:
        """One connection in one transaction, for bulk work beside the Protocol (the copy from SQLite);
        refused, like every write, once a lease is lost."""
        self._check()
        if self._lease_problem is not None:
            raise StoreLeaseError(f"{what}: {self._lease_problem}")
        async with self._pool.acquire() as connection, connection.transaction():
            yield connection

    def _lost(self, problem: str) -> None:
        self._lease_problem = problem

    @property
    def accounts(self) -> tuple[str, ...]:
        """The accounts this process leased (empty when it leased the whole database)."""
        names = self._leases.names if self._leases is not None else ()
        return tuple(n for n in names if n != lease_.WHOLE)

    def _owns(self, chat_id: str) -> bool:
        if self._owns_none:
            return False
        accounts = self.accounts
        if not accounts:
            return True
        try:
            key = ChatKey.parse(chat_id)
        except ValueError:
            return False
        return key.bound and key.account in accounts

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._leases is not None:
                await self._leases.release()
        finally:
            await self._pool.close()

    # -- batched writes ---------------------------------------------------------------------------

    async def write(self, items: Sequence[WriteItem]) -> None:
        self._check()
        if not items:
            return
        items = [i.encodable() if isinstance(i, StoredMessage) else i for i in items]
        texts = [i.text for i in items if isinstance(i, StoredMessage)]
        indexed = await asyncio.to_thread(lambda: [index_text(t) for t in texts]) if texts else []
        it = iter(indexed)
        runs: list[tuple[str, list[list[Any]]]] = []
        for item in items:
            sql, rows = _statements(item, it)
            prepared = [cleaned(r) for r in rows]
            if runs and runs[-1][0] == sql:
                runs[-1][1].extend(prepared)
            else:
                runs.append((sql, prepared))
        added = 0

        async def body(connection: asyncpg.Connection) -> None:
            nonlocal added
            for sql, rows in runs:
                if sql is _MESSAGE_INSERT:
                    added += len(await connection.fetchmany(sql, rows))
                else:
                    await connection.executemany(sql, rows)

        await self._tx("write", body)
        self._message_count += added
        self._batches += 1
        self._items += len(items)

    # -- messages ---------------------------------------------------------------------------------

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
        self._check()
        parsed = parse_query(query)
        if parsed.empty or not chat_ids or limit <= 0 or (newest is not None and newest <= 0):
            return []
        match, rank = text_match("m", parsed)
        where = [f"({match})", f"m.chat_id IN ({placeholders(chat_ids)})"]
        values: list[Any] = list(chat_ids)
        if newest is not None:
            # The window: the chats' newest matches, whatever their recall state or topic.
            where.append(
                f"m.seq >= (SELECT COALESCE(MIN(w.seq), 0) FROM (SELECT m.seq FROM messages AS m WHERE "
                f"({match}) AND m.chat_id IN ({placeholders(chat_ids)}) "
                f"ORDER BY m.seq DESC LIMIT {int(newest)}) AS w)"
            )
            values += list(chat_ids)
        if not include_recalled:
            where.append("m.recalled = 0")
        if topic_thread_id is not None:
            where.append("m.topic_thread_id = ?")
            values.append(topic_thread_id)
        rows = await self._rows(
            f"SELECT {q.M_COLUMNS}, {rank} AS rank FROM messages AS m WHERE {' AND '.join(where)} "
            f"ORDER BY rank DESC, m.seq DESC LIMIT {int(limit)}",
            values,
        )
        return [MessageHit(r_.message_from_row(r), float(r[-1])) for r in rows]

    # -- lexicon ----------------------------------------------------------------------------------

    async def replace_lexicon_terms(self, terms: Sequence[LexiconTermRecord]) -> None:
        rows = [cleaned(r_.term_row(t)) for t in terms]

        async def body(connection: asyncpg.Connection) -> None:
            await connection.execute("DELETE FROM lexicon_terms")
            if rows:
                await connection.executemany(_TERM_UPSERT, rows)

        await self._tx("replace_lexicon_terms", body)

    # -- restoration ----------------------------------------------------------------------------

    async def load_runtime_state(
        self, *, now: float, policy: RestorePolicy = DEFAULT_RESTORE
    ) -> RuntimeState:
        """As every backend restores, narrowed to the chats of the accounts this process leased."""
        self._check()
        state = await load_runtime_state(self, now=now, policy=policy)
        if not self.accounts and not self._owns_none:
            return state
        owns = self._owns
        return RuntimeState(
            events=tuple(e for e in state.events if owns(e.chat_id)),
            pending_activations=tuple(a for a in state.pending_activations if owns(a.chat_id)),
            speeches={chat: items for chat, items in state.speeches.items() if owns(chat)},
            lexicon_terms=tuple(t for t in state.lexicon_terms if t.scope != "group" or owns(t.owner)),
            recent_messages=tuple(m for m in state.recent_messages if owns(m.chat_id)),
            topic_threads=tuple(
                t for t in state.topic_threads if not t.chat_ids or any(owns(c) for c in t.chat_ids)
            ),
            open_sessions=tuple(s for s in state.open_sessions if owns(s.chat_id)),
        )
