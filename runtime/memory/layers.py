"""The five-layer system prompt of design/001, served by the one Context Runtime assembler.

    layer 1  identity            the persona slot (``[persona]``)             ┐ stable prefix
    layer 2  language style      the persona slot's ``language_style``        ┘
    layer 3  user profile        :class:`UserProfiles` → ``profiles=``
    layer 4  memory summary      :class:`MemoryInjector` → ``summaries=`` (≤ system_prompt_max_tokens,
                                 trimmed by ``priority``; the assembler caps it again)
    layer 5  last N rounds raw   the session slot's dialogue, ``2 × sliding_window_rounds`` turns when
                                 the router says no chat model reaches the context target

:func:`memory_layer` builds the two memory parts and the window; :func:`five_layer_runtime` passes them
to :func:`runtime.context.setup.context_runtime`, so there is one builder and one assembler. Retrieval
of raw history stays on beside the summary (a rolling summary alone loses early facts). With a chat
model that reaches the target, the injector still runs (design/001 ④: a long window is not a memory)
and the dialogue keeps ``context.recent_dialogue_max`` turns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from runtime.context.setup import ContextRuntime, context_runtime
from runtime.memory.injector import Compressor, MemoryInjector
from runtime.memory.profiles import UserProfiles
from runtime.memory.settings import InjectorSettings
from runtime.store.protocol import Store
from runtime.store.roles import SummaryRows

__all__ = ["MemoryLayer", "five_layer_runtime", "memory_layer"]


@dataclass(frozen=True, slots=True)
class MemoryLayer:
    """The memory parts of one runtime; ``dialogue_turns`` is the session slot's raw window."""

    injector: MemoryInjector
    profiles: UserProfiles
    dialogue_turns: int
    compensating: bool


def memory_layer(
    store: SummaryRows,
    config: Any,
    router: Compressor,
    *,
    counter: object | None = None,
    clock: Callable[[], float] = time.time,
    data_dir: Path | None = None,
    **settings: Any,
) -> MemoryLayer:
    """The injector and profiles from a ``GreyWindConfig``; ``router`` is the ``ModelRouter``.

    ``counter`` defaults to the router's estimator when it has one; ``settings`` override
    :class:`InjectorSettings` fields the config does not name (retry timing, transcript cap...). The
    transcript cap shrinks to what the compression model's window leaves beside the summary.
    """
    injector_settings = InjectorSettings.from_config(config.memory_injection, **settings)
    window_of = getattr(router, "context_window", None)
    window = window_of("compression") if callable(window_of) else 0
    if window and "transcript_max_tokens" not in settings:
        # The old summary, the instructions and the answer share the compression model's window.
        room = (
            window - injector_settings.system_prompt_max_tokens - injector_settings.answer_max_tokens - 1_000
        )
        fitted = max(1_000, min(injector_settings.transcript_max_tokens, room))
        injector_settings = replace(injector_settings, transcript_max_tokens=fitted)
    compensating = bool(getattr(router, "needs_memory_compensation", True))
    profiles = UserProfiles(store)
    injector = MemoryInjector(
        store,
        router,
        settings=injector_settings,
        counter=counter if counter is not None else getattr(router, "estimator", None),
        clock=clock,
        data_dir=data_dir,
        listener=profiles,
    )
    turns = injector_settings.dialogue_turns(compensating, config.context.recent_dialogue_max)
    return MemoryLayer(injector, profiles, turns, compensating)


def five_layer_runtime(store: Store, config: Any, layer: MemoryLayer, **options: Any) -> ContextRuntime:
    """The Context Runtime with the memory layer plugged in; ``options`` go to ``context_runtime``."""
    return context_runtime(
        store,
        config,
        profiles=layer.profiles,
        summaries=layer.injector,
        dialogue_max=layer.dialogue_turns,
        **options,
    )
