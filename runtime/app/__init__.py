"""The running bot: the Runtime the edge talks to, composing the kernel, episodes, context, memory,
model, tools and store.

::

    runtime.py      Runtime (the edge's RuntimeGateway)
    accounts.py     build_runtime(edge) for use_runtime; AccountsRuntime: one Runtime per account
    compose.py      compose(): the running bot built in dependency order, each part given what it uses;
                    one Lifetime owns every task and registration (stop closes it, the store last)
    core.py         the parts that need nothing but config and clock (kernel, registries, router, ...)
    parts.py        opening the store, and the Context Runtime with the memory layer on it
    alarm.py        the bot's one alarm at the kernel's next activation (poked, never polled)
    loop.py         ActivationLoop: waits on the alarm; episodes in the task group, in slots
    background.py   bookkeeping off the chat's path, drained at stop
    persona.py, why.py  the persona /persona reload replaces; the recent ingest results /why reads
    episodes.py     EpisodeDriver: one ready activation -> packet -> model -> send -> records
    reasoner.py     ModelReasoner over OpenAI tool calling; clean_reply
    extensions.py   loads the extensions (the built-in tools and game, config modules, entry points)
    reminders.py    reminders as kernel activations, for the schedule_message extension
    control.py      the admin commands and mute words (RuntimeControl)
    persistence.py  restore on start, incremental saves, quiet periods, group overrides
    group_gate.py   the runtime's outbound, closed in the groups the bot does not live in
    maintenance.py  periodic jobs: save, lexicon learning, housekeeping, the LifeDirector tick
    ids.py          ids unique across restarts that can give a restored thread its old id

The package defines no exceptions of its own: start-up failures are the store's (``StoreError``
family, or ``ConfigError`` for an unknown ``store.backend``) and reach the lifespan; after start
every failure is caught, logged with its chat, thread and episode, and kept local.
"""

from runtime.app.accounts import build_runtime
from runtime.app.runtime import Runtime, RuntimeStatistics

__all__ = ["Runtime", "RuntimeStatistics", "build_runtime"]
