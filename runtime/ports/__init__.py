"""What an edge and the runtime promise each other: protocols and the values that cross between them.

The runtime is written against these and nothing else of an edge; an edge (``plugins/greywind``, the
QQ side over NoneBot; a test's fake edge; later a web console) implements them and imports them from
here, never the reverse.

    gateway.py   RuntimeGateway (what the runtime offers the edge; NotTakenError when it is not
                 running), EdgeContext (what the edge gives the runtime when it is built),
                 StoresInbound (the optional capability an inbound journal asks of a gateway that
                 stores), RuntimeFactory
    outbound.py  Outbound (how the runtime speaks), QuietGates, and the values GateVerdict,
                 SentRecord, SendResult
    notices.py   the notices an edge reports: Recalled, BotMuted, BotUnmuted, BotRemoved (Notice)
    control.py   RuntimeControl: what admin commands and mute words reach
    console.py   ConsoleSite, ConsoleFactory: what an edge hands the web console it serves
"""

from runtime.ports.console import ConsoleFactory, ConsoleSite
from runtime.ports.control import RuntimeControl
from runtime.ports.gateway import EdgeContext, NotTakenError, RuntimeFactory, RuntimeGateway, StoresInbound
from runtime.ports.notices import BotMuted, BotRemoved, BotUnmuted, Notice, Recalled
from runtime.ports.outbound import GateVerdict, Outbound, QuietGates, SendResult, SentRecord

__all__ = [
    "BotMuted",
    "BotRemoved",
    "BotUnmuted",
    "ConsoleFactory",
    "ConsoleSite",
    "EdgeContext",
    "GateVerdict",
    "NotTakenError",
    "Notice",
    "Outbound",
    "QuietGates",
    "Recalled",
    "RuntimeControl",
    "RuntimeFactory",
    "RuntimeGateway",
    "SendResult",
    "SentRecord",
    "StoresInbound",
]
