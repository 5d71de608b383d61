"""The runtime kernel: pure, synchronous, with an injected clock and no I/O.

See ``docs/ARCHITECTURE.md`` for the map. Nothing here imports NoneBot, aiosqlite or a model client.
"""
