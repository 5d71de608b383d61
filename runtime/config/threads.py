"""``[threads]``: how the kernel groups a chat's messages into conversation threads.

A message joins the recent thread with the best score, or starts a new one when no thread scores
``join_threshold``. A reply always joins its target's thread. The other signals add up: an @ of
someone (``weight_pair`` towards where the two last talked, ``weight_mention`` towards where the
named person last spoke), the speaker's own latest thread (``weight_speaker``) or the thread where
the speaker was last @-ed (``weight_addressed``), shared words weighted by rarity
(``weight_terms``) and plain recency (``weight_recent``, within ``gap_ms``). These defaults are the
bot's and the ones ``bench/disentangle.py`` measures on real chat logs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from runtime.config._base import Section


class ThreadsConfig(Section):
    # A message later than this after a thread's last message never joins it by recency alone.
    gap_ms: int = Field(default=300_000, ge=1_000)
    # Replies, mentions, speakers and shared words can still join a thread idle this long; idler
    # threads are pruned.
    horizon_ms: int = Field(default=1_800_000, ge=1_000)
    # How strongly each signal pulls a message into a thread (scores add up; the best thread wins).
    # An @ of someone: towards the thread where the two last talked by @ (pair), or else where the
    # named person last spoke (mention).
    weight_mention: float = Field(default=1.2, ge=0.0, le=10.0)
    weight_pair: float = Field(default=1.5, ge=0.0, le=10.0)
    # The speaker's own latest thread, and the thread where the speaker was last @-ed or replied to;
    # both fade to nothing over their span, so someone back after a pause may open a new topic.
    weight_speaker: float = Field(default=0.6, ge=0.0, le=10.0)
    weight_addressed: float = Field(default=0.4, ge=0.0, le=10.0)
    speaker_span_ms: int = Field(default=300_000, ge=1_000)
    addressed_span_ms: int = Field(default=1_200_000, ge=1_000)
    weight_terms: float = Field(default=0.6, ge=0.0, le=10.0)
    weight_recent: float = Field(default=0.25, ge=0.0, le=10.0)
    # The score a thread needs for a message to join it rather than start a new thread. With
    # weight_recent >= join_threshold, recency alone joins the latest thread (design/0002's plain rule);
    # in busy groups that chains unrelated conversations, so by default it only adds to other signals.
    join_threshold: float = Field(default=0.4, ge=0.0, le=10.0)
    # Messages without a content word ("lol", "哈哈", a sticker) join the latest thread within the gap.
    chatter_joins_recent: bool = False
    # How a message that is not a reply finds its thread: "learned", the link scorer fitted on annotated
    # chat (bench/train_links.py), with the signals above deciding first where QQ's structure speaks
    # (an @-ed person answering, an @ between two who talked by @, a newcomer's shared words); or
    # "signals", the weighted signals above alone, summed against join_threshold.
    scorer: Literal["signals", "learned"] = "learned"
    # Bounds: live threads and remembered message ids per chat, threads scored per message, words kept
    # per thread, characters and words read per message, chats tracked at once.
    max_threads_per_chat: int = Field(default=64, ge=1)
    max_messages_per_chat: int = Field(default=500, ge=1)
    max_candidates: int = Field(default=12, ge=1)
    max_terms_per_thread: int = Field(default=32, ge=1)
    max_feature_chars: int = Field(default=1_000, ge=1)
    max_terms_per_message: int = Field(default=16, ge=1)
    max_chats: int = Field(default=20_000, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> ThreadsConfig:
        if self.horizon_ms < self.gap_ms:
            raise ValueError("threads.horizon_ms must not be shorter than threads.gap_ms")
        return self
