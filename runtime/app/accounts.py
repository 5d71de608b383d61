"""Several QQ accounts in one process: one runtime stack per account, events routed by account.

With ``[[accounts]]`` tables in the config, :func:`build_runtime` makes an :class:`AccountsRuntime`
instead of one :class:`~runtime.app.runtime.Runtime`. It composes one ``Runtime`` per listed account —
each its own kernel (budgets, threads, lexicon), waiting room, sessions, memories, model router and
token ledger, extensions and periodic jobs, built by the same composition root from the account's
layered config (:func:`runtime.config.accounts.account_config`) — and one *default stack* with the
shared defaults. What the stacks share is the process: the edge (its OneBot server, dispatcher,
journal and send gates) and the lifespan's task group.

Each listed account keeps its state in its own directory, ``<data dir>/accounts/<qq id>/`` (its store
file, quiet periods, group overrides). A store shared between accounts would have to carry the
account in every key that is not a chat's — the global lexicon, user profiles and memories, topic
threads — so the accounts keep one store each and nothing can cross by construction. On PostgreSQL,
one database for all, each listed account's store is its own schema there (``greywind_<qq id>``) and
leases that account (:class:`runtime.store.backends.StoreScope`).

Routing: a message, notice or command belongs to the account its chat key names
(``qq:<account>:...``); a listed account's go to its stack. **An account that is not listed** (it
connects, but has no ``[[accounts]]`` table) is served by the default stack, with the shared defaults
and the top of the data directory — exactly how the process served every account before accounts
were listed, so an existing data directory stays with the account that wrote it. A chat key without
an account (from before keys named it) goes to the default stack too.

The edge's outbound is filtered per stack: each hears only what was sent in its own chats. One
account's disconnect or restriction pause closes only that account's sends (the edge's per-account
circuit); the other stacks never wait on it. Accounts of this process never answer each other
(:mod:`runtime.app.siblings`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

import anyio
import structlog
from anyio.abc import TaskGroup

from runtime.app.runtime import Runtime, RuntimeNotStartedError
from runtime.app.siblings import SiblingAccounts
from runtime.commands import CommandRegistry
from runtime.config.accounts import account_config
from runtime.kernel.message import ChatKey, ChatMessage
from runtime.ports import (
    EdgeContext,
    GateVerdict,
    Notice,
    Outbound,
    QuietGates,
    RuntimeControl,
    RuntimeGateway,
    SendResult,
    SentRecord,
)

__all__ = ["ACCOUNTS_DIR", "AccountOutbound", "AccountsControl", "AccountsRuntime", "build_runtime"]

log = structlog.get_logger("greywind.accounts")

#: Under the data directory: one directory per listed account, named by its QQ number.
ACCOUNTS_DIR = "accounts"


def build_runtime(edge: EdgeContext) -> RuntimeGateway:
    """The factory ``use_runtime`` takes: one runtime stack, or one per account when the config has
    ``[[accounts]]`` tables."""
    if edge.config.accounts:
        return AccountsRuntime(edge)
    return Runtime(edge)


def account_of(chat_id: str) -> str | None:
    """The account a chat key names (None: unbound, or not a chat key)."""
    try:
        key = ChatKey.parse(chat_id)
    except ValueError:
        return None
    return key.account if key.bound else None


class AccountOutbound:
    """The edge's outbound as one stack sees it: it sends through the edge as before, and hears only
    the parts sent in the chats it serves (``serves(chat_id)``)."""

    def __init__(self, outbound: Outbound, serves: Callable[[str], bool]) -> None:
        self._outbound = outbound
        self._serves = serves

    @property
    def gates(self) -> QuietGates:
        return self._outbound.gates

    def gate(self, chat_id: str) -> GateVerdict:
        return self._outbound.gate(chat_id)

    async def send(
        self, chat_id: str, text: str, *, reply_to: str | None = None, admin: bool = False
    ) -> SendResult:
        return await self._outbound.send(chat_id, text, reply_to=reply_to, admin=admin)

    def on_sent(self, listener: Callable[[SentRecord], None]) -> Callable[[], None]:
        def own(record: SentRecord) -> None:
            if self._serves(record.chat_id):
                listener(record)

        return self._outbound.on_sent(own)


class AccountsRuntime:
    """The gateway with one :class:`Runtime` per listed account and the default stack; see the
    module docstring."""

    def __init__(self, edge: EdgeContext) -> None:
        self.edge = edge
        listed = edge.config.account_ids()
        self.siblings = SiblingAccounts(listed)
        self.stacks: dict[str, Runtime] = {
            account: Runtime(self._edge_for(account), siblings=self.siblings) for account in listed
        }
        self.default = Runtime(self._edge_for(None), siblings=self.siblings)
        self._caught_up = 0  # handed writes, summed, when every stack's writer had committed its own

    def _edge_for(self, account: str | None) -> EdgeContext:
        edge = self.edge
        if account is None:
            # Unlisted accounts: the shared defaults, the data directory's top, the old chats' rebinding.
            return replace(
                edge,
                config=account_config(edge.config, None),
                outbound=AccountOutbound(edge.outbound, lambda chat: self.stack_for(chat) is self.default),
                shared_config=edge.config,
            )
        return replace(
            edge,
            config=account_config(edge.config, account),
            data_dir=edge.data_dir / ACCOUNTS_DIR / account,
            outbound=AccountOutbound(edge.outbound, lambda chat: account_of(chat) == account),
            rename=partial(edge.rename_account, account),
            chat_bindings=dict,  # a new directory holds no chat from before keys named the account
            account=account,
            shared_config=edge.config,
        )

    def all_stacks(self) -> tuple[Runtime, ...]:
        return (*self.stacks.values(), self.default)

    def stack_for(self, chat_id: str) -> Runtime:
        """The stack serving ``chat_id``: its account's, else the default stack."""
        account = account_of(chat_id)
        stack = self.stacks.get(account) if account is not None else None
        return stack if stack is not None else self.default

    # -- the gateway ------------------------------------------------------------------------------

    @property
    def commands(self) -> CommandRegistry:
        return self.default.commands

    def commands_for(self, origin: str) -> CommandRegistry:
        return self.stack_for(origin).commands

    @property
    def control(self) -> RuntimeControl:
        return AccountsControl(self, None)

    def control_for(self, origin: str) -> RuntimeControl:
        return AccountsControl(self, origin)

    async def start(self, task_group: TaskGroup) -> None:
        """Start every stack, the listed accounts' first; one that cannot start (its store refused)
        stops those already started, and the start fails as a single stack's would."""
        started: list[Runtime] = []
        try:
            for account, stack in self.stacks.items():
                await stack.start(task_group)
                started.append(stack)
                log.info("account_started", account=account, data_dir=str(stack.edge.data_dir))
            await self.default.start(task_group)
        except BaseException:
            with anyio.CancelScope(shield=True):
                for stack in reversed(started):
                    await stack.stop()
            raise

    async def stop(self) -> None:
        """Every stack stops at once: each closes within its shares of the edge's grace."""
        async with anyio.create_task_group() as group:
            for stack in self.all_stacks():
                group.start_soon(stack.stop)

    async def on_message(self, message: ChatMessage) -> None:
        self.siblings.note(message.account)
        await self.stack_for(message.chat_id).on_message(message)

    async def on_notice(self, notice: Notice) -> None:
        await self.stack_for(notice.chat_id).on_notice(notice)

    # -- what the edge's inbound journal asks -----------------------------------------------------

    def store_progress(self) -> tuple[int, int]:
        """(writes handed, writes done), over every stack's writer. Each writer commits in order, but
        one may lag while another runs ahead, so the sum of done writes proves nothing: writes count
        as done up to the total handed when, last seen, every writer had done all it was handed."""
        handed = done = 0
        behind = dropped = False
        for stack in self.all_stacks():
            try:
                stack_handed, stack_done = stack.store_progress()
            except RuntimeNotStartedError:
                continue
            handed += stack_handed
            done += stack_done
            dropped = dropped or stack_done < 0
            behind = behind or stack_done < stack_handed
        if dropped:
            return handed, -1  # a dropped write is only in the journal: nothing counts as done
        if not behind:
            self._caught_up = handed
        return handed, min(done, self._caught_up)

    async def stored_already(self, messages: Sequence[ChatMessage]) -> list[bool]:
        found: dict[int, bool] = {}
        by_stack: dict[int, list[int]] = {}
        stacks = {id(s): s for s in self.all_stacks()}
        for index, message in enumerate(messages):
            by_stack.setdefault(id(self.stack_for(message.chat_id)), []).append(index)
        for key, indexes in by_stack.items():
            answers = await stacks[key].stored_already([messages[i] for i in indexes])
            found.update(zip(indexes, answers, strict=True))
        return [found[i] for i in range(len(messages))]


class AccountsControl:
    """The admin commands across stacks: a command naming a chat reaches that chat's stack; one
    naming none (``/status`` from a private chat, ``/persona reload``) reaches the stack of the chat
    it came from (``origin``; None: the default stack)."""

    def __init__(self, accounts: AccountsRuntime, origin: str | None) -> None:
        self._accounts = accounts
        self._origin = origin

    def _at(self, chat_id: str) -> RuntimeControl:
        return self._accounts.stack_for(chat_id).control

    def _home(self) -> RuntimeControl:
        if self._origin is None:
            return self._accounts.default.control
        return self._at(self._origin)

    async def status(self, chat_id: str | None, *, full: bool = False) -> str:
        control = self._home() if chat_id is None else self._at(chat_id)
        return await control.status(chat_id, full=full)

    async def why(self, chat_id: str, message_id: str | None) -> str:
        return await self._at(chat_id).why(chat_id, message_id)

    async def mute(self, chat_id: str, until: float | None, *, by: str, reason: str) -> str:
        return await self._at(chat_id).mute(chat_id, until, by=by, reason=reason)

    async def unmute(self, chat_id: str, *, by: str, reason: str) -> str:
        return await self._at(chat_id).unmute(chat_id, by=by, reason=reason)

    async def lexicon_list(self, chat_id: str) -> str:
        return await self._at(chat_id).lexicon_list(chat_id)

    async def lexicon_add(self, chat_id: str, term: str, weight: float | None) -> str:
        return await self._at(chat_id).lexicon_add(chat_id, term, weight)

    async def lexicon_pin(self, chat_id: str, term: str) -> str:
        return await self._at(chat_id).lexicon_pin(chat_id, term)

    async def lexicon_suppress(self, chat_id: str, term: str) -> str:
        return await self._at(chat_id).lexicon_suppress(chat_id, term)

    async def persona_reload(self) -> str:
        return await self._home().persona_reload()

    async def bind(self, chat_id: str, thread: str, vision: str | None) -> str:
        return await self._at(chat_id).bind(chat_id, thread, vision)

    async def set_group(self, chat_id: str, on: bool, *, by: str) -> str:
        return await self._at(chat_id).set_group(chat_id, on, by=by)
