"""A data directory from before chat keys named their account, rebound to bound keys.

The database (:mod:`runtime.store.sqlite.rebind`) and the state files keyed by chat
(:data:`CHAT_KEYED_FILES`: the quiet periods) are rewritten from one mapping *unbound id -> bound id*.
Two ways in:

* at start (:func:`rebind_known`), from what the edge recorded about which account each old chat had
  (``EdgeContext.chat_bindings``); only chats the data directory still holds unbound are touched, so
  a start with nothing to rebind costs one scan of the chat id indexes;
* by the operator (``python -m runtime.store rebind --account <id>``, :func:`bind_all`) for a data
  directory without that record: every unbound chat goes to the one account named.

A state file that cannot be read is left as it is (logged); a key whose bound twin is already in the
file keeps the newer, bound entry. A backend takes part by offering :class:`RebindsChats` (the SQLite
one does; one that keeps nothing across restarts has nothing to rebind).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

import structlog

from runtime.kernel.message import ChatKey
from runtime.quiet import QUIET_FILE
from runtime.store.sqlite.rebind import RebindReport

__all__ = [
    "CHAT_KEYED_FILES",
    "RebindsChats",
    "bind_all",
    "rebind_files",
    "rebind_known",
    "unbound_in_files",
]

log = structlog.get_logger("greywind.store")

#: State files in the data directory that are a JSON object keyed by chat id.
CHAT_KEYED_FILES = (QUIET_FILE,)


@runtime_checkable
class RebindsChats(Protocol):
    """A store that can list the unbound chat ids it holds and rewrite them, in one transaction."""

    async def unbound_chats(self) -> list[str]: ...
    async def rebind_chats(self, bindings: Mapping[str, str]) -> RebindReport: ...


def _unbound(chat_id: str) -> bool:
    try:
        return not ChatKey.parse(chat_id).bound
    except ValueError:
        return False


def _load(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("state_file_unreadable", path=str(path), error=repr(exc))
        return None
    return data if isinstance(data, dict) else None


def unbound_in_files(data_dir: Path) -> set[str]:
    found: set[str] = set()
    for name in CHAT_KEYED_FILES:
        data = _load(data_dir / name)
        found.update(chat for chat in data or () if _unbound(chat))
    return found


def rebind_files(data_dir: Path, bindings: Mapping[str, str]) -> dict[str, int]:
    """Rewrite the keys of the chat-keyed state files (atomic replace); keys rewritten per file."""
    changed: dict[str, int] = {}
    for name in CHAT_KEYED_FILES:
        path = data_dir / name
        data = _load(path)
        if not data or not any(chat in bindings for chat in data):
            continue
        rebound: dict[str, object] = {}
        count = 0
        for chat, value in data.items():
            new = bindings.get(chat)
            if new is None:
                rebound.setdefault(chat, value)
            else:
                count += 1
                if new not in data:  # the bound entry, written since, is the newer one
                    rebound[new] = value
        temporary = path.with_suffix(".rebind.tmp")
        try:
            temporary.write_text(json.dumps(rebound, ensure_ascii=False, sort_keys=True), encoding="utf-8")
            os.replace(temporary, path)
        except OSError as exc:
            log.warning("state_file_rebind_failed", path=str(path), error=repr(exc))
            continue
        changed[name] = count
    return changed


async def _apply(store: RebindsChats, data_dir: Path, bindings: Mapping[str, str]) -> RebindReport:
    report = await store.rebind_chats(bindings)
    report.chats = len(bindings)
    for name, count in rebind_files(data_dir, bindings).items():
        report.rows[name] = count
    if report.rows or report.kept:
        log.info(
            "chats_rebound", chats=len(bindings), rows=report.total, tables=report.rows, kept=report.kept
        )
    return report


async def rebind_known(store: RebindsChats, data_dir: Path, known: Mapping[str, str]) -> RebindReport:
    """Rebind the unbound chats the data directory holds whose account ``known`` says; the rest are
    logged (``chats_unbound``) with the command that binds them."""
    held = set(await store.unbound_chats()) | unbound_in_files(data_dir)
    if not held:
        return RebindReport()
    bindings = {chat: known[chat] for chat in sorted(held) if chat in known}
    report = await _apply(store, data_dir, bindings) if bindings else RebindReport()
    left = sorted(held - bindings.keys())
    if left:
        log.warning(
            "chats_unbound",
            count=len(left),
            chats=left[:20],
            hint="python -m runtime.store rebind --account <self_id> binds them to one account",
        )
    return report


async def bind_all(store: RebindsChats, data_dir: Path, *, platform: str, account: str) -> RebindReport:
    """Bind every unbound chat the data directory holds to ``account`` on ``platform``."""
    held = set(await store.unbound_chats()) | unbound_in_files(data_dir)
    bindings = {chat: ChatKey.parse(chat).bind(platform, account).chat_id for chat in sorted(held)}
    return await _apply(store, data_dir, bindings)
