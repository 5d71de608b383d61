"""Cross-validate the link scorer on the train split: exact F and the rest, every file scored unseen.

``bench/disentangle.py``'s train-held-out set is 15 files (6,248 messages, a few hundred
conversations): one variant of the scorer can move its exact F by a point on a handful of
conversations. This script scores a variant on all the fitted files instead: they are cut into
``--folds`` folds (every k-th file), the scorer is fitted on the other folds (as
``bench/train_links.py`` fits it) and each fold is tracked with those weights, unseen; the pooled
scores of every fold are printed, with each fold's exact F. The train-held-out files, dev and
new-domains are not read.

    .venv/bin/python bench/crossval_links.py [--folds 5] [--steps 400] [--jobs 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.disentangle import (
    HEADER,
    Clusters,
    bot_thread_settings,
    load_files,
    predict_tracker,
    row,
    score,
    to_clusters,
    train_split,
)
from bench.train_links import Example, examples, fit


def folds(files: Sequence[Path], k: int) -> list[tuple[list[Path], list[Path]]]:
    """(fitted on, scored) for each of ``k`` folds: every k-th file from the fold's number is scored,
    the others fitted on."""
    if k < 2:
        raise ValueError("cross-validation needs at least 2 folds")
    cuts = [list(files[start::k]) for start in range(k)]
    return [([f for f in files if f not in cut], cut) for cut in cuts]


def _fold(job: tuple[list[Path], list[Path], int, float]) -> list[tuple[Clusters, Clusters]]:
    """Fit on ``fitted``, track ``scored`` with the fit: (gold, predicted) per scored file."""
    fitted, scored, steps, l2 = job
    signals = dataclasses.replace(bot_thread_settings(), scorer="signals")
    data: list[Example] = examples(fitted, signals)
    weights = tuple(round(float(x), 4) for x in fit(data, steps, l2, quiet=True))
    settings = bot_thread_settings()
    return [
        (gold, to_clusters(predict_tracker(log, settings, weights)[0])) for _, log, gold in load_files(scored)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--l2", type=float, default=1e-5)
    parser.add_argument("--jobs", type=int, default=2, help="folds fitted at once (processes)")
    args = parser.parse_args(argv)

    files, _held_out = train_split()
    try:
        cut = folds(files, args.folds)
    except ValueError as error:
        parser.error(str(error))
    jobs = [(fitted, scored, args.steps, args.l2) for fitted, scored in cut]
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(_fold, jobs))
    print(f"{len(files)} train files in {args.folds} folds, {time.perf_counter() - started:.0f} s")
    print(HEADER)
    for k, pairs in enumerate(results):
        print(row(f"fold {k + 1}", score(pairs)))
    print(row("train, cross-validated", score([pair for pairs in results for pair in pairs])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
