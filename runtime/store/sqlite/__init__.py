"""The aiosqlite backend: ``await SqliteStore.open()`` opens ``$GREYWIND_DATA_DIR/greywind.sqlite3``."""

from runtime.store.sqlite.schema import DB_FILENAME, LATEST_VERSION
from runtime.store.sqlite.store import SqliteStore

__all__ = ["DB_FILENAME", "LATEST_VERSION", "SqliteStore"]
