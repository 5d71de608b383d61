"""bench/crossval_links.py's folds: every fitted train file scored once, never by a fit that read it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.crossval_links import folds


def test_every_file_is_scored_once_by_a_fit_that_never_read_it() -> None:
    files = [Path(f"f{n:03d}.ascii.txt") for n in range(23)]
    cut = folds(files, 5)
    assert len(cut) == 5
    scored = [f for _, fold in cut for f in fold]
    assert sorted(scored) == files  # each file in exactly one fold
    for fitted, fold in cut:
        assert not set(fitted) & set(fold)
        assert sorted(fitted + fold) == files
    assert {len(fold) for _, fold in cut} == {4, 5}


def test_one_fold_is_no_cross_validation() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        folds([Path("a"), Path("b")], 1)
