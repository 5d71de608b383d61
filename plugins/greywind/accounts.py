"""Which chats each QQ account has heard, kept across restarts.

A chat's key names its account (``qq:<self_id>:group:<id>``), so a reply, a reminder or a proactive
message leaves through that account and no other: the key routes, not this record. What is kept here
is the list the status line counts (chats per account), and, for a data directory written before
chats carried their account, the one place that says which account an old, unbound chat
(``group:<id>``) had: the account that delivered its first message. At start the runtime rebinds the
old chat ids in the store and the state files from those lines (:meth:`ChatOwners.bindings`).

The record lives in ``chat_owners.jsonl`` in the data directory, one ``{"chat": ..., "account": ...}``
line per chat, appended when a chat is first heard (so nothing is rewritten as the number of chats
grows). A line that cannot be read is skipped and logged; the first line for a chat wins.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import structlog

from runtime.kernel.message import ChatKey, ChatKind

__all__ = ["OWNERS_FILE", "ChatOwners"]

log = structlog.get_logger("greywind.accounts")

OWNERS_FILE = "chat_owners.jsonl"


class ChatOwners:
    """chat id -> the account (``self_id``) that heard it first; ``path`` None keeps it in memory only."""

    __slots__ = ("_newline_first", "_owners", "_path")

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._owners: dict[str, str] = {}
        self._newline_first = False  # the file ends in a torn line: start the next one afresh
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return
        except OSError as exc:
            log.warning("chat_owners_unreadable", path=str(path), error=repr(exc))
            return
        self._newline_first = bool(text) and not text.endswith("\n")
        skipped = 0
        for line in text.splitlines():
            try:
                row = json.loads(line)
                chat, account = str(row["chat"]), str(row["account"])
            except (ValueError, TypeError, KeyError):
                skipped += 1
                continue
            self._owners.setdefault(chat, account)
        if skipped:
            log.warning("chat_owners_lines_skipped", path=str(path), skipped=skipped)

    def owner(self, chat_id: str) -> str | None:
        return self._owners.get(chat_id)

    def claim(self, chat_id: str, account: str) -> bool:
        """``account`` delivered a message of ``chat_id``: recorded unless the chat is known.
        True when the chat is new (and was written down)."""
        if not account or chat_id in self._owners:
            return False
        self._owners[chat_id] = account
        log.info("chat_owner", chat_id=chat_id, account=account)
        if self._path is not None:
            line = json.dumps({"chat": chat_id, "account": account}, ensure_ascii=False)
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                with self._path.open("a", encoding="utf-8") as file:
                    file.write(("\n" if self._newline_first else "") + line + "\n")
                self._newline_first = False
            except OSError as exc:  # routing still works for this run
                log.warning("chat_owner_save_failed", path=str(self._path), error=repr(exc))
        return True

    def bindings(self, platform: str) -> dict[str, str]:
        """Unbound chat id -> the bound one, for the chats recorded before keys named their account."""
        out: dict[str, str] = {}
        for chat, account in self._owners.items():
            try:
                key = ChatKey.parse(chat)
                if not key.bound:
                    out[chat] = key.bind(platform, account).chat_id
            except ValueError:
                log.warning("chat_owner_unreadable", chat=chat, account=account)
        return out

    def chats_per_account(self) -> dict[str, int]:
        """Chats per account; one recorded both before and after keys named its account counts once."""
        chats: set[tuple[str, str]] = set()
        for chat, account in self._owners.items():
            try:
                chats.add((account, ChatKey.parse(chat).unbound().chat_id))
            except ValueError:
                chats.add((account, chat))
        return dict(Counter(account for account, _ in chats))

    def group_count(self) -> int:
        """Group chats heard, over every account (one recorded before and after keys named its
        account counts once)."""
        groups: set[str] = set()
        for chat in self._owners:
            try:
                key = ChatKey.parse(chat)
            except ValueError:
                continue
            if key.kind is ChatKind.GROUP:
                groups.add(key.unbound().chat_id)
        return len(groups)

    def __len__(self) -> int:
        return len(self._owners)
