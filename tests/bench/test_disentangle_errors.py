"""The disentanglement error breakdown on tiny hand-made cases."""

from __future__ import annotations

from collections import Counter

from bench.disentangle import DEFAULT_DATA, bot_thread_settings, load, to_clusters
from bench.disentangle_errors import conversation_errors, decisions, local_errors, start_errors


def test_each_gold_conversation_is_exact_merged_split_or_both() -> None:
    gold = {
        "exact": [1000, 1001],
        "merged": [1002, 1003],  # all in x, with a message of "alone"
        "alone": [1004],
        "split": [1005, 1006, 1007],  # over y and z, which hold nothing else
        "both": [1008, 1009, 1010],  # over v and w, and w holds 1011 too
        "other": [1011],
    }
    pred = {
        "e": [1000, 1001],
        "x": [1002, 1003, 1004],
        "y": [1005],
        "z": [1006, 1007],
        "v": [1008],
        "w": [1009, 1010, 1011],
    }
    errors = conversation_errors(gold, pred)
    assert errors[("2", "exact")] == 1
    assert errors[("2", "merged")] == 1
    assert errors[("3-4", "split")] == 1
    assert errors[("3-4", "both")] == 1
    # predicted threads of 2+: e (exact), z, w (3-4), x (3-4); only e is a gold conversation
    assert (errors[("2", "predicted")], errors[("2", "predicted exact")]) == (2, 1)
    assert (errors[("3-4", "predicted")], errors[("3-4", "predicted exact")]) == (2, 0)


def test_starts_count_each_gold_conversations_first_message_by_what_the_tracker_did() -> None:
    gold = {"a": [1000, 1002, 1003], "b": [1001, 1004], "c": [1005]}
    reasons = {1000: "new", 1001: "speaker", 1002: "mention", 1003: "new", 1004: "terms", 1005: "new"}
    starts = start_errors(gold, reasons)
    assert starts == Counter({("start", "new"): 1, ("start", "speaker"): 1, ("inside", "new"): 1})


def test_loc3_disagreements_are_split_or_merged_by_the_later_messages_reason() -> None:
    gold = {"a": [1000, 1001], "b": [1002]}
    pred = {"x": [1000], "y": [1001, 1002]}
    reasons = {1000: "new", 1001: "new", 1002: "speaker"}
    errors = local_errors(gold, pred, reasons)
    # pairs: (1000,1001) gold same, pred apart: split by 1001's "new"; (1000,1002) agree (both apart);
    # (1001,1002) gold apart, pred same: merged by 1002's "speaker"
    assert errors == Counter({("pairs", ""): 3, ("split", "new"): 1, ("merged", "speaker"): 1})


def test_on_the_dev_split_every_gold_conversation_gets_one_kind_and_the_exact_ones_match_the_scorer() -> None:
    settings = bot_thread_settings()
    gold_multi = exact = found = 0
    for _stem, log, gold in load(DEFAULT_DATA)[:3]:
        labels, _reasons = decisions(log, settings)
        pred = to_clusters(labels)
        errors = conversation_errors(gold, pred)
        kinds = sum(n for (_, kind), n in errors.items() if kind in ("exact", "merged", "split", "both"))
        assert kinds == sum(1 for ms in gold.values() if len(ms) > 1)
        gold_multi += kinds
        found += sum(n for (_, kind), n in errors.items() if kind == "exact")
        exact += len(
            {frozenset(ms) for ms in gold.values() if len(ms) > 1} & {frozenset(ms) for ms in pred.values()}
        )
    assert found == exact
    assert 0 < found < gold_multi
