"""What an edge hands a web console it serves: the running gateway, the edge's context and figures.

The console (``runtime.console``) is a second edge over the same ports: it reads the runtime and
steers it through :class:`~runtime.ports.RuntimeControl`, never a copy of its logic. The edge that owns
the HTTP server builds a :class:`ConsoleSite` once the gateway has started and calls the
:data:`ConsoleFactory` it was handed (``bot.py`` hands it, as it hands the runtime factory); the
factory returns an ASGI application to mount at ``/console``, or None when the console stays off
(its reason logged).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runtime.ports.gateway import EdgeContext, RuntimeGateway

__all__ = ["ConsoleFactory", "ConsoleSite"]


@dataclass(frozen=True, slots=True)
class ConsoleSite:
    gateway: RuntimeGateway
    edge: EdgeContext
    host: str  # where the HTTP server listens (a console off loopback needs a password)
    # The edge's figures as a frozen dataclass (connections, dispatcher, outbound, loop lag), for the
    # console's overview; anything with fields will do.
    edge_statistics: Callable[[], Any] = field(default=lambda: None)


# site -> an ASGI application, or None (the console is off; the factory has logged why).
ConsoleFactory = Callable[[ConsoleSite], Any]
