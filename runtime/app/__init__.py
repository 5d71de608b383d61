"""The running bot: the Runtime the edge talks to, composing the kernel, episodes, context, memory,
model, tools and store.

::

    runtime.py      Runtime (the edge's RuntimeGateway), build_runtime(edge) for use_runtime
    parts.py        the store-backed parts opened at start (store, writer, memory layer, context)
    loop.py         ActivationLoop: one alarm at the kernel's next activation; episodes in the task group
    episodes.py     EpisodeDriver: one ready activation -> packet -> model -> send -> records
    reasoner.py     ModelReasoner over OpenAI tool calling; clean_reply
    extensions.py   loads the extensions (the built-in tools and game, config modules, entry points)
    reminders.py    reminders as kernel activations, for the schedule_message extension
    control.py      the admin commands and mute words (RuntimeControl)
    persistence.py  restore on start, incremental saves, quiet periods
    maintenance.py  periodic jobs: save, lexicon learning, housekeeping, the LifeDirector tick
    ids.py          ids unique across restarts that can give a restored thread its old id

The package defines no exceptions of its own: start-up failures are the store's (``StoreError``
family) and reach the lifespan; after start every failure is caught, logged with its chat, thread and
episode, and kept local.
"""

from runtime.app.runtime import Runtime, RuntimeStatistics, build_runtime

__all__ = ["Runtime", "RuntimeStatistics", "build_runtime"]
