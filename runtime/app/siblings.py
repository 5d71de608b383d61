"""The accounts of one process must not talk to each other.

Two accounts of the same process in one group hear each other: each one's words reach the other as
a group member's. Answered like anyone's, a question from one would make the other reply, that reply
the first, without end. The rule here is the one place that prevents it: a message whose sender is
another account of this process (a *sibling*) is heard — it joins its conversation thread, the
recent buffer and the store, so what it said is context — but it never raises attention and never
triggers an episode, addressed or not. The accounts known are the ``[[accounts]]`` of the config
and every account a message has since arrived through.

Other bots are the kernel's :class:`~runtime.kernel.bots.BotRoster` (listed, detected, an exchange
ended after ``[bots] max_turns`` turns without a person). A sibling is stricter than any of them: it
gets no turn at all, so the rule stays here, ahead of the kernel, rather than in the roster.
"""

from __future__ import annotations

from collections.abc import Iterable

from runtime.kernel.message import ChatMessage

__all__ = ["SiblingAccounts"]


class SiblingAccounts:
    """The QQ accounts this process speaks through; see the module docstring."""

    __slots__ = ("_accounts",)

    def __init__(self, accounts: Iterable[str] = ()) -> None:
        self._accounts: set[str] = {str(a) for a in accounts if a}

    def note(self, account: str) -> None:
        """A message arrived through ``account``: it is one of this process's."""
        if account:
            self._accounts.add(account)

    def known(self) -> frozenset[str]:
        return frozenset(self._accounts)

    def heard_from_sibling(self, message: ChatMessage) -> bool:
        """Whether ``message`` was written by another account of this process than the one that
        heard it (never true of the bot's own messages)."""
        sender = message.sender_id
        return not message.from_self and sender != message.account and sender in self._accounts
