"""Property: whatever the interleaving, a packet's dialogue and retrieved history hold only its own
conversation's words, and nothing of another chat appears anywhere (design/000 §1.2: no cross-talk)."""

from __future__ import annotations

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.config import parse_config
from runtime.context.builder import ChatInfo
from runtime.context.setup import context_runtime
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.store.memory import MemoryStore
from runtime.store.records import StoredMessage

# (chat, conversation) -> a marker only that conversation ever says. Every message also says 火锅, so
# full-text retrieval would find all of them if scope and conversation rules did not hold.
MARKERS = {
    ("1", "a"): "红豆沙",
    ("1", "b"): "绿豆糕",
    ("2", "a"): "黑芝麻",
    ("2", "b"): "白凉粉",
}
KEYS = sorted(MARKERS)


async def scenario(order: list[int], bot_every: int) -> None:
    store = MemoryStore()
    try:
        rt = context_runtime(store, parse_config({}))
        last: dict[tuple[str, str], ChatMessage] = {}
        for i, pick in enumerate(order):
            group, conv = KEYS[pick]
            from_self = bot_every > 0 and i % bot_every == bot_every - 1
            message = ChatMessage(
                message_id=f"m{i}",
                chat_kind=ChatKind.GROUP,
                chat_ident=group,
                sender_id="bot" if from_self else f"u{pick}",
                sender_name="灰风" if from_self else f"群友{pick}",
                time=float(i),
                text=f"今晚火锅要不要加{MARKERS[(group, conv)]}",
                from_self=from_self,
                reply_to=last[(group, conv)].message_id if from_self and (group, conv) in last else None,
            )
            await store.append_messages(
                [StoredMessage.from_chat_message(message, thread_id=f"th-{group}{conv}")]
            )
            if not from_self:
                last[(group, conv)] = message
        for n, ((group, conv), said_last) in enumerate(sorted(last.items())):
            # The trigger names only what all conversations share, so a search finds every one of them.
            trigger = ChatMessage(
                message_id=f"t{n}",
                chat_kind=ChatKind.GROUP,
                chat_ident=group,
                sender_id=said_last.sender_id,
                sender_name=said_last.sender_name,
                time=len(order) + float(n),
                text="那火锅到底加不加",
            )
            await store.append_messages(
                [StoredMessage.from_chat_message(trigger, thread_id=f"th-{group}{conv}")]
            )
            chat = ChatInfo(f"group:{group}", "group", f"群{group}")
            built, prompt = await rt.prepare(
                trigger,
                chat=chat,
                now=trigger.time,
                reason="forced",
                conversation_thread_id=f"th-{group}{conv}",
            )
            sent = "\n".join(m["content"] for m in prompt.as_messages())
            assert MARKERS[(group, conv)] in sent
            packet = built.packet
            assert packet.session is not None
            # What was said: this conversation's dialogue, the retrieved history, the input.
            said = [t.text for t in packet.session.recent_dialogue] + [r.content for r in packet.retrieved]
            for other, marker in MARKERS.items():
                if other[0] != group:
                    assert marker not in sent, (group, conv, other)  # another chat: nowhere at all
                elif other != (group, conv):
                    # The same chat's other conversation may share the topic thread (a shared theme has
                    # one thread) but never its words: not in the dialogue, not retrieved.
                    assert all(marker not in text for text in said), (group, conv, other)
            for turn in packet.session.recent_dialogue:
                assert MARKERS[(group, conv)] in turn.text
    finally:
        await store.close()


@settings(max_examples=25, deadline=None)
@given(order=st.lists(st.integers(0, len(KEYS) - 1), min_size=4, max_size=30), bot_every=st.integers(0, 4))
def test_no_packet_shows_another_conversations_or_another_chats_words(
    order: list[int], bot_every: int
) -> None:
    anyio.run(scenario, order, bot_every)
