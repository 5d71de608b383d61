"""What an extension declares: a name, an optional config model, and a setup function.

An extension is a value, not a subclass: a module (named in ``[extensions] modules``, or the target of
a ``greywind.extensions`` entry point) exposes an :class:`Extension` as its ``extension`` attribute, or
the entry point / ``module:attribute`` path names the value itself. The loader validates the
extension's config section with ``config`` (a pydantic model) and calls ``setup`` once with an
:class:`~runtime.extensions.context.ExtensionContext`; everything setup registers through the context
is owned by the extension's scope and goes when the extension is unloaded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel

from runtime.extensions.spec import check_name

if TYPE_CHECKING:
    from runtime.extensions.context import ExtensionContext

__all__ = ["Extension", "Setup"]

Setup = Callable[["ExtensionContext"], "Awaitable[None] | None"]


@dataclass(frozen=True, slots=True)
class Extension:
    """A loadable extension; ``name`` is its key in ``disabled`` and ``[extensions.config.<name>]``."""

    name: str
    setup: Setup
    config: type[BaseModel] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        check_name("extension", self.name)
