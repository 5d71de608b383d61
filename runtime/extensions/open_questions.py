"""Open questions: what someone asked the bot that it never answered, the grounds of a follow-up.

A message addressed to the bot that asks something (the kernel's question check) is *open* until the
bot says something in its conversation thread or quotes it. The bot may have chosen silence, the
model may have failed, the chat may have been muted, the budget may have dropped it. Once a question
has been open ``[life] follow_up_after_ms`` (and not longer than ``follow_up_within_ms``), this life
source proposes one proactive activation for it, with :attr:`~runtime.extensions.spec.Grounds.OPEN_QUESTION`:
the one reason, besides a due follow-up or a memory hook, that lets the bot speak into a chat that
went silent. Outside the quiet hours only; a question is proposed once.

One question per chat is kept (the latest; a newer one replaces it), for at most ``max_chats``
chats: what it holds is bounded however many chats the account is in.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from runtime.extensions.spec import Grounds, LifeContext, Proposal
from runtime.kernel._signals import looks_like_question
from runtime.kernel.message import ChatMessage

__all__ = ["OpenQuestion", "OpenQuestions"]

_SHOWN = 80  # characters of the question quoted in the cue


@dataclass(frozen=True, slots=True)
class OpenQuestion:
    message_id: str
    thread_id: str | None
    sender_name: str
    text: str
    time: float


class OpenQuestions:
    """See the module docstring. :meth:`note` takes every message (the bot's own too), :meth:`poll`
    is the life source's ``poll``."""

    def __init__(self, *, after: float, within: float, max_chats: int = 4_096) -> None:
        self._after = after
        self._within = within
        self._max_chats = max_chats
        self._open: OrderedDict[str, OpenQuestion] = OrderedDict()

    def note(self, message: ChatMessage, thread_id: str | None) -> None:
        """A message in: a question to the bot opens, the bot's answer in its thread closes it."""
        chat_id = message.chat_id
        if message.from_self:
            current = self._open.get(chat_id)
            if current is not None and (
                message.reply_to == current.message_id
                or (thread_id is not None and thread_id == current.thread_id)
            ):
                del self._open[chat_id]
            return
        if not message.addressed or not looks_like_question(message.text):
            return
        self._open[chat_id] = OpenQuestion(
            message.message_id,
            thread_id,
            message.sender_name or message.sender_id,
            message.text[:_SHOWN],
            message.time,
        )
        self._open.move_to_end(chat_id)
        while len(self._open) > self._max_chats:
            self._open.popitem(last=False)

    def pending(self, chat_id: str) -> OpenQuestion | None:
        return self._open.get(chat_id)

    def poll(self, context: LifeContext) -> list[Proposal]:
        if context.quiet:
            return []  # kept for the morning, if it is still within follow_up_within then
        now = context.now
        proposals: list[Proposal] = []
        for chat_id, question in list(self._open.items()):
            age = now - question.time
            if age > self._within:
                del self._open[chat_id]
                continue
            if age < self._after:
                continue
            del self._open[chat_id]  # proposed once
            proposals.append(
                Proposal(
                    chat_id,
                    f"{question.sender_name} 问你的问题还没有回答：{question.text}",
                    thread_id=question.thread_id,
                    grounds=Grounds.OPEN_QUESTION,
                    payload={
                        "cue": (
                            f"（之前 {question.sender_name} 问过你：“{question.text}”"
                            f"（#{question.message_id}），"
                            "你还没有回答。现在补上一句；已经不需要的话就保持沉默。）"
                        ),
                        "question": question.message_id,
                    },
                )
            )
        return proposals
