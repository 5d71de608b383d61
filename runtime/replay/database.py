"""``--from-db DATA_DIR``: what the bot really saw, read back from its own SQLite store.

Every stored message (``Store.messages_since`` over all time, oldest first) becomes a
:class:`~runtime.replay.reader.SourceMessage`, so the replay of a database is the replay of a log:
replay it under another config to tune. A message is addressed when the edge judged it so at the time
(``addressed`` is stored: it knows replies the adapter resolved) or when the rule of
:mod:`runtime.replay.addressing` says so under the config given now (a new alias counts).

The bot's account id is taken from ``--self-id`` when given, else from the stored messages the bot sent
(``from_self``), else the default. Opening the store brings an older schema up to date, as the bot
itself would on start; point the replay at a copy if the bot must not see that happen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from runtime.config.store import StoreConfig
from runtime.kernel.message import ChatKey, ChatMessage
from runtime.replay import ReplayInputError
from runtime.replay.addressing import Addressing, truncate_text
from runtime.replay.engine import platform_id
from runtime.replay.reader import SourceMessage
from runtime.store.backends import open_store
from runtime.store.errors import StoreError
from runtime.store.records import StoredMessage
from runtime.store.sqlite import DB_FILENAME

__all__ = ["convert_stored", "guess_self_id", "load_stored_messages"]


async def load_stored_messages(data_dir: Path) -> list[StoredMessage]:
    """Every message of ``DATA_DIR/greywind.sqlite3``, oldest first; refuses a missing database."""
    file = data_dir / DB_FILENAME
    if not file.is_file():
        raise ReplayInputError(f"no GreyWind database at {file} (is DATA_DIR the bot's GREYWIND_DATA_DIR?)")
    try:
        # The bot's database file, so the SQLite backend by name, whatever the config says.
        store = await open_store(StoreConfig(backend="sqlite"), data_dir)
    except StoreError as exc:
        raise ReplayInputError(f"cannot open {file}: {exc}") from exc
    try:
        total = await store.count_messages()
        if not total:
            return []
        return await store.messages_since(float("-inf"), per_chat=total)
    except StoreError as exc:
        raise ReplayInputError(f"cannot read {file}: {exc}") from exc
    finally:
        await store.close()


def guess_self_id(stored: Sequence[StoredMessage]) -> str | None:
    """The sender of most of the bot's own stored messages, if it sent any."""
    counts = Counter(m.sender_id for m in stored if m.from_self)
    if not counts:
        return None
    return min(counts.items(), key=lambda item: (-item[1], item[0]))[0]


def convert_stored(
    stored: Sequence[StoredMessage], addressing: Addressing
) -> tuple[list[SourceMessage], list[str]]:
    """The messages to replay, and why any were skipped (an unreadable chat id)."""
    out: list[SourceMessage] = []
    skipped: list[str] = []
    bot_messages: set[tuple[str, str]] = set()
    for row in stored:
        try:
            key = ChatKey.parse(row.chat_id)
        except ValueError:
            skipped.append(f"message {row.message_id}: unknown chat id {row.chat_id!r}")
            continue
        from_self = row.from_self or row.sender_id == addressing.self_id
        if from_self:
            bot_messages.add((row.chat_id, row.message_id))
        private = key.is_private
        how = ""
        if not from_self:
            how = addressing.how(
                private=private,
                mentions=row.mentions,
                replies_to_bot=row.reply_to is not None and (row.chat_id, row.reply_to) in bot_messages,
                text=row.text,
            )
            if not how and row.addressed:
                how = "edge"
        message = ChatMessage(
            message_id=row.message_id,
            chat_kind=key.kind,
            chat_ident=key.ident,
            platform=key.platform,
            account=key.account,
            sender_id=row.sender_id,
            sender_name=row.sender_name,
            time=row.time,
            text=truncate_text(row.text, addressing.max_chars)[0],
            mentions=tuple(row.mentions),
            reply_to=row.reply_to,
            addressed=bool(how),
            from_self=from_self,
        )
        group = None if private else platform_id(key.ident)
        out.append(SourceMessage(message, platform_id(row.message_id), group, None, how))
    return out, skipped
