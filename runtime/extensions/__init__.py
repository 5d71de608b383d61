"""Extensions (design/0002 §11): scopes, games, activities, life sources, the LifeDirector, and the
loader's :class:`Extension` / :class:`ExtensionContext` (``loader.py`` loads them; ``builtin/`` holds
the built-in ones).

::

    ExtensionError                  base of mistakes made when registering extensions
    ├── ScopeClosedError            something was registered into a disposed scope (and was undone)
    ├── DuplicateExtensionError     a game / activity / life source name is taken
    └── InvalidExtensionError       a spec cannot be used (bad name, no tools, bad interval)

Failures of running extensions are not exceptions to callers: a game move that raises is a failed
tool result, a life source that raises is logged and counted by the director.
"""

from __future__ import annotations

from runtime.extensions.chat_activity import ChatActivity, ChatActivityLog
from runtime.extensions.context import ExtensionContext, StoreReader
from runtime.extensions.director import LifeDirector, LifeSettings, TickReport, Verdict
from runtime.extensions.errors import (
    DuplicateExtensionError,
    ExtensionError,
    InvalidExtensionError,
    ScopeClosedError,
)
from runtime.extensions.manifest import Extension
from runtime.extensions.registry import ExtensionRegistry, Registration, TermRegistry
from runtime.extensions.scope import Disposer, Scope
from runtime.extensions.spec import (
    ActivitySpec,
    GameContext,
    GameSpec,
    GameTool,
    Grounds,
    LifeContext,
    LifeSourceSpec,
    Proposal,
)

__all__ = [
    "ActivitySpec",
    "ChatActivity",
    "ChatActivityLog",
    "Disposer",
    "DuplicateExtensionError",
    "Extension",
    "ExtensionContext",
    "ExtensionError",
    "ExtensionRegistry",
    "GameContext",
    "GameSpec",
    "GameTool",
    "Grounds",
    "InvalidExtensionError",
    "LifeContext",
    "LifeDirector",
    "LifeSettings",
    "LifeSourceSpec",
    "Proposal",
    "Registration",
    "Scope",
    "ScopeClosedError",
    "StoreReader",
    "TermRegistry",
    "TickReport",
    "Verdict",
]
