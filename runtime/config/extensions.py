"""``[extensions]``: which extensions load, which are switched off, and each one's own section.

Extensions come from ``modules`` (import paths, ``package.module`` or ``package.module:attribute``)
and, with ``entry_points``, from installed distributions declaring the ``greywind.extensions`` entry
point group; the built-ins load first. ``disabled`` names extensions not to load (a built-in
included). ``[extensions.config.<name>]`` is handed to that extension's own config model, which
checks it when the extension loads: a bad value refuses that extension, naming the dotted key.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from runtime.config._base import Section


class ExtensionsConfig(Section):
    modules: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    entry_points: bool = True
    # A listener that takes longer than this for one message is abandoned for that message.
    listener_timeout_ms: int = Field(default=2_000, ge=10)
    # An async setup that takes longer than this refuses its extension.
    setup_timeout_ms: int = Field(default=10_000, ge=10)
    config: dict[str, dict[str, Any]] = Field(default_factory=dict)
