"""Chat keys: the account a chat is heard through is part of its name, in one canonical string."""

from __future__ import annotations

import pytest

from runtime.kernel.message import ChatKey, ChatKind, ChatMessage, chat_id_for, parse_chat_id


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("qq:10001:group:123", ChatKey("qq", "10001", ChatKind.GROUP, "123")),
        ("qq:10001:private:42", ChatKey("qq", "10001", ChatKind.PRIVATE, "42")),
        ("console:local:private:ops", ChatKey("console", "local", ChatKind.PRIVATE, "ops")),
        ("group:123", ChatKey("", "", ChatKind.GROUP, "123")),
        ("private:42", ChatKey("", "", ChatKind.PRIVATE, "42")),
    ],
)
def test_both_forms_round_trip(text: str, key: ChatKey) -> None:
    assert ChatKey.parse(text) == key
    assert str(key) == key.chat_id == text
    assert key.bound is bool(key.account)
    assert parse_chat_id(text) == (key.kind, key.ident)
    assert chat_id_for(key.kind, key.ident, platform=key.platform, account=key.account) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "group",
        "group:",
        "channel:1",
        "qq:group:1",
        "qq:10001:channel:1",
        "qq::group:1",
        ":1:group:1",
        "group:group:private:1",
        "qq:1:group:1:2",
        "group:1:2",
    ],
)
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="chat"):
        ChatKey.parse(text)


def test_a_key_is_bound_whole_or_not_at_all() -> None:
    with pytest.raises(ValueError):
        ChatKey("qq", "", ChatKind.GROUP, "1")
    with pytest.raises(ValueError):
        ChatKey("", "10001", ChatKind.GROUP, "1")
    with pytest.raises(ValueError):
        ChatKey.of("group", "1", platform="qq", account="a:b")


def test_binding_and_siblings_keep_the_rest() -> None:
    unbound = ChatKey.of("group", 123)
    bound = unbound.bind("qq", "10001")
    assert bound.chat_id == "qq:10001:group:123"
    assert bound.unbound() == unbound
    assert bound.sibling(ChatKind.GROUP, 5151).chat_id == "qq:10001:group:5151"
    assert unbound.sibling("private", "7").chat_id == "private:7"
    assert len({bound, bound.bind("qq", "10002"), unbound}) == 3


def test_a_message_names_its_chat_with_its_account() -> None:
    plain = ChatMessage("1", ChatKind.GROUP, "123", "42", "alice", 0.0, "hi")
    assert plain.chat_id == "group:123"
    assert plain.key == ChatKey.parse("group:123")
    heard = ChatMessage("1", ChatKind.GROUP, "123", "42", "alice", 0.0, "hi", platform="qq", account="10001")
    assert heard.chat_id == "qq:10001:group:123"
    assert heard.key == ChatKey.parse(heard.chat_id)
    assert (
        heard.chat_id
        != ChatMessage(
            "1", ChatKind.GROUP, "123", "42", "a", 0.0, "hi", platform="qq", account="10002"
        ).chat_id
    )
