"""Debug exports under ``GREYWIND_DATA_DIR/memory/<conversation>/`` (design/001's file names).

``compressed.json`` is the current summary document; ``injection-log.json`` the recent compressions,
failures, triggers and injections. SQLite stays the source of truth: these files are written after
the database and only for people reading them, so a failed write is logged and otherwise ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import structlog

__all__ = ["COMPRESSED_FILE", "INJECTION_LOG_FILE", "conversation_dir", "export_memory", "safe_name"]

log = structlog.get_logger("greywind.memory")

COMPRESSED_FILE = "compressed.json"
INJECTION_LOG_FILE = "injection-log.json"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_MAX_NAME = 80
_CHAT_ID = re.compile(r"(?:[a-z][a-z0-9]{0,15}:[0-9]{1,20}:)?(?:group|private):[0-9]{1,20}")
_CHAT_DIR = re.compile(r"(?:[a-z][a-z0-9]{0,15}_[0-9]{1,20}_)?(?:group|private)_[0-9]{1,20}")  # chat ids' own


def safe_name(conversation: str) -> str:
    """A directory name for a conversation key: ``qq:10001:group:123`` → ``qq_10001_group_123``.

    Chat ids (``group:<digits>``, ``private:<digits>``, bound or not) map one to one by turning ``:``
    into ``_``; any other key that needs more changes (or is too long, or would be ``.``/``..``) gets a
    short hash of the original appended, so two keys never share a directory.
    """
    if _CHAT_ID.fullmatch(conversation):
        return conversation.replace(":", "_")
    cleaned = _UNSAFE.sub("_", conversation)
    plain = cleaned == conversation and len(cleaned) <= _MAX_NAME and cleaned.strip(".")
    if plain and not _CHAT_DIR.fullmatch(cleaned):
        return cleaned
    digest = hashlib.blake2b(conversation.encode("utf-8"), digest_size=5).hexdigest()
    return f"{cleaned[:_MAX_NAME].strip('.') or 'conversation'}-{digest}"


def conversation_dir(data_dir: Path, conversation: str) -> Path:
    return data_dir / "memory" / safe_name(conversation)


def _write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(payload, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)  # readers never see half a file


def _write_both(directory: Path, document: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]) -> None:
    _write_json(directory / COMPRESSED_FILE, dict(document))
    _write_json(directory / INJECTION_LOG_FILE, [dict(e) for e in entries])


async def export_memory(
    data_dir: Path, conversation: str, document: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]
) -> bool:
    """Write both files (in a worker thread); ``False`` and a warning when the disk refuses."""
    directory = conversation_dir(data_dir, conversation)
    try:
        await anyio.to_thread.run_sync(_write_both, directory, document, list(entries))
    except OSError as exc:
        log.warning("memory.export_failed", conversation=conversation, path=str(directory), error=repr(exc))
        return False
    return True
