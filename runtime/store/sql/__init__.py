"""What the two SQL backends share, written once: statements with SQLite's ``?`` placeholders (the
PostgreSQL base numbers them as ``$n``) and the table methods whose SQL both dialects read alike.

::

    base.py         SqlBase: what a backend gives the shared methods (a read, a write, whether open)
    rows.py         records to rows and back; the column lists match both backends' migrations
    statements.py   the upserts and other statements, placeholders(), LIMIT and memory-scope clauses
    context.py      topic threads, sessions, transcripts, handoffs, tasks, memories' plain reads
    layer.py        memory summaries, the token ledger, user profiles, episodes, tool calls
    log.py          messages, events, scheduled activations, the speech log, lexicon terms
    migrations.py   the numbered migration scripts a backend ships (each applies them its own way)

A backend's table group inherits the shared one before its base (``class ContextTables(ContextQueries,
SqliteBase)``) and defines only what its dialect does differently: full-text search, transactions of
several statements, and the phrases a shared method reads from a class attribute.
"""
