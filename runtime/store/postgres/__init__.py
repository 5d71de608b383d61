"""The asyncpg backend: ``[store] backend = "postgresql"``, the DSN from ``$GREYWIND_PG_DSN``.

::

    store.py        ``PostgresStore``: messages, events, lexicon, restore; open = connect, migrate, lease
    tables.py       the context, memory-layer, episode and tool-call tables
    base.py         the pool; ``?`` statements numbered as ``$n``; transactions and their errors
    search.py       jieba's tokens (``runtime.store.text``) as tsvector / tsquery literals
    schema.py       numbered migrations (``migrations/NNNN_*.sql``) under an advisory lock per schema;
                    ``greywind_<qq id>``, the schema of a listed account's tables
    lease.py        one process per account: lease rows with a TTL, renewed in the background
    copy.py         ``python -m runtime.store migrate``: an SQLite database copied into PostgreSQL

asyncpg is an optional dependency (``pip install 'greywind[postgresql]'``): nothing here is imported
unless the backend is chosen.
"""

from runtime.store.postgres.schema import LATEST_VERSION
from runtime.store.postgres.store import PostgresStore, redacted

__all__ = ["LATEST_VERSION", "PostgresStore", "redacted"]
