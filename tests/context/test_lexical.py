"""Words for the resolver and retrieval: chatter, continuation, rarity, overlap."""

from __future__ import annotations

import pytest

from runtime.context.lexical import by_rarity, is_chatter, lexical_score, query_terms, strip_names
from runtime.store.text import parse_query


@pytest.mark.parametrize(
    "text", ["哈哈哈哈", "早上好", "[图片]", "666", "嗯嗯", "好的", "在吗", "？？？", "几点了"]
)
def test_chatter(text: str) -> None:
    assert is_chatter(text)


@pytest.mark.parametrize(
    "text", ["继续", "接着上次的说", "帮我规划周末去杭州的路线", "用Python写爬虫", "向量数据库怎么选"]
)
def test_not_chatter(text: str) -> None:
    assert not is_chatter(text)


def test_the_bots_names_are_no_topic() -> None:
    assert strip_names("灰风，早上好", ["灰风"]).strip(" ，") == "早上好"
    assert is_chatter(strip_names("GreyWind 在吗", ["greywind"]))


def test_rarest_words_first_common_ones_dropped() -> None:
    ranked = by_rarity(["我们", "今天", "火锅", "python", "ok", "666"])
    assert ranked[0] == "python"  # outside the dictionary: a name, rare
    assert "火锅" in ranked
    assert "我们" not in ranked  # too common to be worth a search
    assert "ok" not in ranked
    assert "666" not in ranked
    assert by_rarity(["我们"]) == ("我们",)  # unless nothing else is left


def test_overlap_weighs_content_words_not_common_ones() -> None:
    haystack = "灰风系统架构设计 architecture"
    words = frozenset(parse_query(haystack).words)  # as the resolver builds a thread's words
    assert lexical_score(query_terms("灰风的架构还要改吗"), haystack, words) >= 0.5
    assert lexical_score(query_terms("今天我们吃什么"), haystack, words) == 0.0
    assert lexical_score((), haystack, words) == 0.0
