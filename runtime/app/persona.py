"""The persona the running bot speaks as: one shared, replaceable value (``/persona reload`` swaps it).

Every part that names the bot (the driver's replies, the bot's own messages as they are recorded, the
admin status) reads it here, so a reload reaches them all at once.
"""

from __future__ import annotations

from runtime.config.persona import PersonaConfig

__all__ = ["Persona"]


class Persona:
    __slots__ = ("config",)

    def __init__(self, config: PersonaConfig) -> None:
        self.config = config

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def names(self) -> tuple[str, ...]:
        """The name and the aliases, as addressing matches them."""
        return (self.config.name, *self.config.aliases)

    def replace(self, config: PersonaConfig) -> None:
        self.config = config
