"""``SqliteStore``: the Protocol on one SQLite file (WAL, synchronous=NORMAL, numbered migrations).

Durability: a committed transaction survives ``kill -9`` of the process (WAL with synchronous=NORMAL
may lose the last commits only on a power cut or OS crash, never on a process kill). What the writer
task has queued but not yet committed is lost on ``kill -9``: at most one flush interval of items.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiosqlite

from runtime.config.store import StoreConfig
from runtime.store.errors import PartlyWrittenError, StoreCorruptError
from runtime.store.paths import data_dir_from_env
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
from runtime.store.sqlite.base import log
from runtime.store.sqlite.context import ContextTables
from runtime.store.sqlite.layer import LayerTables
from runtime.store.sqlite.rebind import RebindReport, check_bindings, rebind, unbound_chats
from runtime.store.sqlite.schema import (
    DB_FILENAME,
    check_file_header,
    configure,
    ensure_data_dir,
    migrate,
    retrying,
)
from runtime.store.text import (
    IndexedText,
    TextQuery,
    fts_match,
    index_text,
    parse_query,
    quote_token,
    warm_up,
)

# A message is a new row unless the same delivery is already stored (records.same_delivery).
_MESSAGE_INSERT = (
    f"INSERT INTO messages ({r_.MESSAGE_COLUMNS}, words, chars) "
    f"SELECT {', '.join('?' * 15)} WHERE NOT EXISTS (SELECT 1 FROM messages "
    "WHERE chat_id = ? AND message_id = ? AND time BETWEEN ? AND ? "
    "AND ((? = 1 AND from_self <> 0) OR (? = 0 AND sender_id = ? AND text = ?)))"
)
# Up to this many chats, the search names them inside the FTS MATCH too.
_CHATS_IN_MATCH = 16


async def _open_reader(file: Path, config: StoreConfig) -> aiosqlite.Connection:
    """The read connection: WAL lets it read while the write connection waits or fails."""
    reader = await aiosqlite.connect(file, isolation_level=None)
    try:
        await reader.execute(f"PRAGMA busy_timeout = {int(config.busy_timeout_ms)}")
        await reader.execute("PRAGMA synchronous = NORMAL")
        await reader.execute("PRAGMA query_only = ON")
    except BaseException:
        await reader.close()
        raise
    return reader


def _statements(item: WriteItem, indexed: Iterator[IndexedText]) -> tuple[str, list[tuple[Any, ...]]]:
    if isinstance(item, StoredMessage):
        row = r_.message_row(item, next(indexed))
        window = (item.time - DUPLICATE_WINDOW, item.time + DUPLICATE_WINDOW)
        mine = int(item.from_self)
        return _MESSAGE_INSERT, [
            (*row, item.chat_id, item.message_id, *window, mine, mine, item.sender_id, item.text)
        ]
    if isinstance(item, MessageRecalled):
        return q.RECALL, [(item.chat_id, item.message_id)]
    if isinstance(item, TopicLink):
        return q.LINK, [(item.topic_thread_id, item.chat_id, mid) for mid in item.message_ids]
    if isinstance(item, SpeechRecord):
        return q.SPEECH_INSERT, [r_.speech_row(item)]
    if isinstance(item, EventRecord):
        return q.EVENT_UPSERT, [r_.event_row(item)]
    if isinstance(item, ScheduledActivation):
        return q.ACTIVATION_UPSERT, [r_.activation_row(item)]
    if isinstance(item, ActivationDone):
        return q.ACTIVATION_DELETE, [(item.event_id,)]
    if isinstance(item, ToolCallRecord):
        return q.TOOL_CALL_UPSERT, [r_.tool_call_row(item)]
    raise TypeError(f"not a write item: {item!r}")


def _prepare(items: Sequence[WriteItem]) -> tuple[list[tuple[str, list[tuple[Any, ...]]]], bool]:
    """A batch's statements, and whether it holds messages. An odd character in one message must not
    cost the batch: it is stored as U+FFFD."""
    items = [i.encodable() if isinstance(i, StoredMessage) else i for i in items]
    texts = [i.text for i in items if isinstance(i, StoredMessage)]
    indexed = iter([index_text(t) for t in texts])
    return [_statements(item, indexed) for item in items], bool(texts)


# A batch's statements run this many items at a time; another write may go in between.
APPLY_SLICE = 20


def _apply(
    connection: sqlite3.Connection,
    statements: Sequence[tuple[str, list[tuple[Any, ...]]]],
    start: int,
    wanted: Callable[[], bool],
) -> int:
    """Run ``statements[start:]`` (one per item) on ``connection``, consecutive items of one kind in
    one ``executemany`` of at most :data:`APPLY_SLICE` items; stop early, after at least one, once
    ``wanted()`` (another write waits for the connection). Returns where it stopped."""
    end = len(statements)
    at = start
    while at < end:
        sql = statements[at][0]
        upto = at
        rows: list[tuple[Any, ...]] = []
        while upto < end and upto - at < APPLY_SLICE and statements[upto][0] == sql:
            rows.extend(statements[upto][1])
            upto += 1
        connection.executemany(sql, rows).close()
        at = upto
        if at < end and wanted():
            break
    return at


def _backup_target(target: Path) -> None:
    if target.exists():
        raise FileExistsError(f"backup target {target} exists")
    ensure_data_dir(target.parent)


def message_search_sql(
    parsed: TextQuery,
    *,
    chat_ids: Collection[str],
    limit: int,
    topic_thread_id: str | None = None,
    include_recalled: bool = False,
    newest: int | None = None,
) -> tuple[str, list[Any]]:
    """The statement of :meth:`SqliteStore.search_messages` (a query that is not empty, chats given)."""
    match = fts_match(parsed)
    narrowed = len(chat_ids) <= _CHATS_IN_MATCH
    if narrowed:
        # Narrow inside the index first; the SQL filter below stays the guarantee.
        chats = " OR ".join(quote_token(c) for c in chat_ids)
        match = f"({match}) AND (chat_id : ({chats}))"
    where = [f"m.chat_id IN ({placeholders(chat_ids)})"]
    params: list[Any] = [match, *chat_ids]
    if newest is not None:
        # The window: the chats' newest matches (the index walks them newest first and stops there),
        # and the ranked query reads its matches from the oldest of them on, so bm25 scores the
        # window's rows only (it still counts each phrase's rows for its weight, in C, ~45 ns a row).
        chats_of = "" if narrowed else f" AND n.chat_id IN ({placeholders(chat_ids)})"
        join = "" if narrowed else " JOIN messages AS n ON n.seq = f.rowid"
        where.append(
            "messages_fts.rowid >= (SELECT COALESCE(MIN(w.rowid), 0) FROM (SELECT f.rowid AS rowid "
            f"FROM messages_fts AS f{join} WHERE f.messages_fts MATCH ?{chats_of} "
            f"ORDER BY f.rowid DESC LIMIT {int(newest)}) AS w)"
        )
        params += [match] if narrowed else [match, *chat_ids]
    if not include_recalled:
        where.append("m.recalled = 0")
    if topic_thread_id is not None:
        where.append("m.topic_thread_id = ?")
        params.append(topic_thread_id)
    sql = (
        f"SELECT {q.M_COLUMNS}, bm25(messages_fts, 2.0, 1.0, 0.0) AS rank "
        "FROM messages_fts JOIN messages AS m ON m.seq = messages_fts.rowid "
        f"WHERE messages_fts MATCH ? AND {' AND '.join(where)} "
        f"ORDER BY rank, m.seq DESC LIMIT {int(limit)}"
    )
    return sql, params


class SqliteStore(ContextTables, LayerTables, LogQueries):
    """SQLite backend of :class:`runtime.store.protocol.Store`. Create it with :meth:`open`."""

    backend = "sqlite"
    tables_sql = (
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND name NOT LIKE '%fts%' ORDER BY name"
    )

    @classmethod
    async def open(cls, path: Path | str | None = None, *, config: StoreConfig | None = None) -> SqliteStore:
        """Open (creating if needed) the database and bring its schema up to date.

        ``path`` defaults to ``greywind.sqlite3`` under ``GREYWIND_DATA_DIR``. Raises ``DataDirError``,
        ``StoreCorruptError``, ``SchemaTooNewError``, ``MigrationError`` or ``StoreLockedError``; the file
        is never modified before it passed the header and integrity checks.
        """
        config = config or StoreConfig()
        file = Path(path) if path is not None else data_dir_from_env() / DB_FILENAME
        await asyncio.to_thread(ensure_data_dir, file.parent)
        await asyncio.to_thread(check_file_header, file)
        # Segmenting the first message would otherwise stall the event loop for ~0.8 s.
        await asyncio.to_thread(warm_up)
        db = await aiosqlite.connect(file, isolation_level=None)
        try:

            async def prepare() -> int:
                await configure(
                    db, file, busy_timeout_ms=config.busy_timeout_ms, quick_check=config.quick_check_on_start
                )
                return await migrate(db, file)

            version = await retrying(
                "open", prepare, retries=config.lock_retries, backoff=config.lock_backoff_ms / 1000
            )
        except sqlite3.DatabaseError as exc:
            await db.close()
            raise StoreCorruptError(str(file), str(exc)) from exc
        except BaseException:
            await db.close()
            raise
        reader: aiosqlite.Connection | None = None
        try:
            reader = await _open_reader(file, config)
            addressed_reader = await _open_reader(file, config)  # addressed work's own
        except BaseException:
            if reader is not None:
                await reader.close()
            await db.close()
            raise
        store = cls(db, file, config, version, reader, addressed_reader)
        store._message_count = await store.count_messages()
        log.info("store.opened", path=str(file), schema_version=version, messages=store._message_count)
        return store

    async def unbound_chats(self) -> list[str]:
        """The chat ids held without their account (``group:123``), written before keys named it."""
        self._check()
        async with self._read_lock:
            result: list[str] = await self._retry("unbound_chats", lambda: unbound_chats(self._reader))
            return result

    async def rebind_chats(self, bindings: Mapping[str, str]) -> RebindReport:
        """Rewrite unbound chat ids to bound ones everywhere a chat is named, in one transaction
        (:mod:`runtime.store.sqlite.rebind`)."""
        check_bindings(bindings)
        report = RebindReport()

        async def body(db: aiosqlite.Connection) -> None:
            nonlocal report
            report = await rebind(db, bindings)

        if bindings:
            await self._tx("rebind_chats", body)
        return report

    async def backup(self, destination: Path | str) -> Path:
        """A consistent copy of the database, taken while it is in use (``VACUUM INTO``)."""
        target = Path(destination)
        await asyncio.to_thread(_backup_target, target)
        self._check()
        async with self._lock:
            await self._retry("backup", lambda: self._db.execute("VACUUM INTO ?", (str(target),)))
        return target

    # -- batched writes ---------------------------------------------------------------------------

    async def write(self, items: Sequence[WriteItem]) -> None:
        """Every item in one transaction, in order; when another write queues for the connection
        meanwhile (an @'s own above all), the items written so far are committed and the rest follow
        in a transaction of their own once it went (:func:`_apply`): a batch of hundreds holds
        nobody up for more than a slice. A failure after such a commit raises
        ``PartlyWrittenError`` naming how many items are in."""
        self._check()
        if not items:
            return
        # Off the event loop: a flood's batch of 500 took tens of milliseconds of it to prepare.
        statements, texts = await asyncio.to_thread(_prepare, items)
        wanted = self._wanted
        applied = 0
        while applied < len(statements):
            start = applied

            def body(connection: sqlite3.Connection, start: int = start) -> tuple[int, int]:
                done = _apply(connection, statements, start, wanted)
                if not texts:
                    return done, self._message_count
                # Messages are never deleted and a repeated delivery takes no rowid: the top is the count.
                row = connection.execute("SELECT COALESCE(MAX(seq), 0) FROM messages").fetchone()
                return done, int(row[0]) if row else self._message_count

            try:
                applied, self._message_count = await self._tx_in_thread("write", body)
            except Exception as exc:
                if start == 0:
                    raise
                raise PartlyWrittenError(start, exc) from exc
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
        sql, params = message_search_sql(
            parsed,
            chat_ids=chat_ids,
            limit=limit,
            topic_thread_id=topic_thread_id,
            include_recalled=include_recalled,
            newest=newest,
        )
        rows = await self._rows(sql, params)
        return [MessageHit(r_.message_from_row(r), -float(r[-1])) for r in rows]

    # -- lexicon ----------------------------------------------------------------------------------

    async def replace_lexicon_terms(self, terms: Sequence[LexiconTermRecord]) -> None:
        rows = [r_.term_row(t) for t in terms]

        async def body(db: aiosqlite.Connection) -> None:
            await db.execute("DELETE FROM lexicon_terms")
            await db.executemany(q.TERM_UPSERT, rows)

        await self._tx("replace_lexicon_terms", body)

    # -- restoration ----------------------------------------------------------------------------

    async def load_runtime_state(
        self, *, now: float, policy: RestorePolicy = DEFAULT_RESTORE
    ) -> RuntimeState:
        self._check()
        return await load_runtime_state(self, now=now, policy=policy)
