"""Rebinding chat ids: the rows written before a chat's key named its account get that account.

A database written before chat keys carried the account holds *unbound* chat ids (``group:123``)
wherever a chat is named; the running bot names the same chat ``qq:10001:group:123``. Left alone, the
bot would not find its own history: threads, sessions, memories, budgets and scheduled reminders of
the old chat would belong to a chat nobody speaks in. :func:`rebind` rewrites every place a chat id is
held, in one transaction, from a mapping *unbound id -> bound id*:

* the plain chat id columns (:data:`CHAT_COLUMNS`), the memories of a chat's scope and the lexicon
  terms of a group's scope;
* the JSON that names chats: a topic thread's ``chat_ids_json`` and a session's screen context.

The messages' full-text index follows through its update trigger. A row whose bound twin already
exists (a primary key or a unique pair: the bot ran with bound keys before the rebind) is left as it
was and counted in ``kept``: nothing is overwritten, nothing is lost, and a second rebind finds it
again. :func:`unbound_chats` lists the unbound ids still held, for an operator to bind.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiosqlite

from runtime.kernel.message import ChatKey
from runtime.store.sql.rows import dumps

__all__ = ["CHAT_COLUMNS", "RebindReport", "check_bindings", "rebind", "unbound_chats"]

#: (table, column, condition) of every column holding a chat id; the condition picks the rows whose
#: column is one (a memory's scope id names a chat only in the chat scope).
CHAT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("messages", "chat_id", ""),
    ("events", "chat_id", ""),
    ("scheduled_activations", "chat_id", ""),
    ("speech_log", "chat_id", ""),
    ("sessions", "chat_id", ""),
    ("transcripts", "chat_id", ""),
    ("episodes", "chat_id", ""),
    ("tool_calls", "chat_id", ""),
    ("token_usage", "chat_id", ""),
    ("memory_summaries", "conversation", ""),
    ("memories", "scope_id", "scope_type = 'chat'"),
    ("lexicon_terms", "owner", "scope = 'group'"),
)


@dataclass(slots=True)
class RebindReport:
    """Rows rewritten per ``table.column``; ``kept``: rows left unbound because their bound twin exists;
    ``chats``: how many chats were rebound."""

    chats: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def _is_unbound(chat_id: object) -> bool:
    try:
        return isinstance(chat_id, str) and not ChatKey.parse(chat_id).bound
    except ValueError:
        return False


def check_bindings(bindings: Mapping[str, str]) -> None:
    """``ValueError`` unless every pair is an unbound chat id and the same chat bound."""
    for old, new in bindings.items():
        if not _is_unbound(old) or not _binds(old, new):
            raise ValueError(f"not an unbound chat id and its bound form: {old!r} -> {new!r}")


def _binds(old: str, new: str) -> bool:
    try:
        key = ChatKey.parse(new)
    except ValueError:
        return False
    return key.bound and key.unbound().chat_id == old


async def unbound_chats(db: aiosqlite.Connection) -> list[str]:
    """Every unbound chat id the database holds, sorted."""
    found: set[str] = set()
    for table, column, condition in CHAT_COLUMNS:
        where = f" WHERE {condition}" if condition else ""
        async with db.execute(f"SELECT DISTINCT {column} FROM {table}{where}") as cur:
            found.update(str(row[0]) for row in await cur.fetchall() if _is_unbound(row[0]))
    async with db.execute("SELECT chat_ids_json FROM threads") as cur:
        for (text,) in await cur.fetchall():
            found.update(chat for chat in _json(text, []) if _is_unbound(chat))
    async with db.execute("SELECT screen_context_json FROM sessions") as cur:
        for (text,) in await cur.fetchall():
            screen = _json(text, {})
            if isinstance(screen, dict) and _is_unbound(screen.get("chat_id")):
                found.add(screen["chat_id"])
    return sorted(found)


async def rebind(db: aiosqlite.Connection, bindings: Mapping[str, str]) -> RebindReport:
    """Rewrite the unbound chat ids named in ``bindings`` to their bound ids (inside the caller's
    transaction). Only unbound -> bound pairs are taken: ``ValueError`` for any other."""
    check_bindings(bindings)
    report = RebindReport()
    if not bindings:
        return report
    pairs = [(new, old) for old, new in bindings.items()]
    for table, column, condition in CHAT_COLUMNS:
        extra = f" AND {condition}" if condition else ""
        name = f"{table}.{column}"
        changed = 0
        for new, old in pairs:
            cur = await db.execute(
                f"UPDATE OR IGNORE {table} SET {column} = ? WHERE {column} = ?{extra}", (new, old)
            )
            changed += max(cur.rowcount, 0)
        async with db.execute(
            f"SELECT COUNT(*) FROM {table} WHERE {column} IN ({', '.join('?' * len(bindings))}){extra}",
            tuple(bindings),
        ) as cur:
            row = await cur.fetchone()
        left = int(row[0]) if row else 0
        if changed:
            report.rows[name] = changed
        if left:
            report.kept[name] = left
    threads = await _rewrite_json(db, "threads", "id", "chat_ids_json", bindings, _bind_list)
    sessions = await _rewrite_json(db, "sessions", "id", "screen_context_json", bindings, _bind_screen)
    if threads:
        report.rows["threads.chat_ids_json"] = threads
    if sessions:
        report.rows["sessions.screen_context_json"] = sessions
    return report


def _json(text: str, default: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return default


def _bind_list(value: Any, bindings: Mapping[str, str]) -> Any:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return value
    return list(dict.fromkeys(bindings.get(item, item) for item in value))


def _bind_screen(value: Any, bindings: Mapping[str, str]) -> Any:
    if isinstance(value, dict) and isinstance(value.get("chat_id"), str):
        return {**value, "chat_id": bindings.get(value["chat_id"], value["chat_id"])}
    return value


async def _rewrite_json(
    db: aiosqlite.Connection,
    table: str,
    key: str,
    column: str,
    bindings: Mapping[str, str],
    bind: Callable[[Any, Mapping[str, str]], Any],
) -> int:
    async with db.execute(f"SELECT {key}, {column} FROM {table}") as cur:
        rows = await cur.fetchall()
    changed = 0
    for ident, text in rows:
        value = _json(text, None)
        bound = bind(value, bindings)
        if bound != value:
            await db.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (dumps(bound), ident))
            changed += 1
    return changed
