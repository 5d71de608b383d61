"""Scopes: reverse-order disposal, idempotence, nesting, and failures that stay local."""

from __future__ import annotations

import pytest

from runtime.extensions import Scope, ScopeClosedError


def test_disposers_run_newest_first_and_once() -> None:
    order: list[str] = []
    scope = Scope("p")
    for name in "abc":
        scope.add(lambda name=name: order.append(name))
    assert scope.statistics().live == 3
    assert scope.dispose() == 0
    scope.dispose()
    assert order == ["c", "b", "a"]
    assert scope.disposed
    assert scope.statistics().live == 0


def test_a_handle_undoes_one_registration_early() -> None:
    order: list[str] = []
    scope = Scope("p")
    scope.add(lambda: order.append("a"))
    undo_b = scope.add(lambda: order.append("b"))
    undo_b()
    undo_b()
    scope.dispose()
    assert order == ["b", "a"]


def test_children_go_with_the_parent_in_order() -> None:
    order: list[str] = []
    parent = Scope("plugin")
    parent.add(lambda: order.append("parent-first"))
    child = parent.child("game")
    child.add(lambda: order.append("child"))
    parent.add(lambda: order.append("parent-last"))
    parent.dispose()
    assert order == ["parent-last", "child", "parent-first"]
    assert child.disposed
    assert child.name == "plugin/game"


def test_child_disposed_early_leaves_the_parent_clean() -> None:
    parent = Scope("plugin")
    for _ in range(100):
        parent.child("round").dispose()
    stats = parent.statistics()
    assert (stats.live, stats.children) == (0, 0)


def test_a_failing_disposer_does_not_stop_the_others() -> None:
    order: list[str] = []
    scope = Scope("p")
    scope.add(lambda: order.append("a"))
    scope.add(lambda: 1 / 0)
    scope.add(lambda: order.append("c"))
    assert scope.dispose() == 1
    assert order == ["c", "a"]
    assert scope.statistics().errors == 1


def test_registering_into_a_disposed_scope_undoes_it_at_once() -> None:
    undone: list[str] = []
    scope = Scope("p")
    scope.dispose()
    with pytest.raises(ScopeClosedError):
        scope.add(lambda: undone.append("late"))
    assert undone == ["late"]
    with pytest.raises(ScopeClosedError):
        scope.child("x")


def test_scope_as_context_manager() -> None:
    undone: list[int] = []
    with Scope("p") as scope:
        scope.add(lambda: undone.append(1))
    assert undone == [1]
