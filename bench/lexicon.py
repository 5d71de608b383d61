"""DynamicLexicon benchmark: matching speed against a naive loop, memory at scale, learning, decay.

Printed (medians over ``--runs`` runs of CPU time; each run goes over the same messages):

- match and score at 10,000 global terms, in µs per message, beside a naive ``term in text`` loop
  over the same terms and a plain pyahocorasick automaton over the text itself (no code-unit
  spelling), with the ratios;
- memory for ``--groups`` groups × (10,000 global + 500 group terms), every automaton built: the
  RSS the lexicon added and the process's peak RSS (``--tracemalloc`` adds traced figures);
- the per-message cost over global (10,000) + one group (500) keys, the way the kernel asks, with
  a random group per message (caches cold: the worst case) and with bursts from one group;
- automaton rebuild time for one group and for the global key;
- decay and snapshot over every term;
- learning with real jieba (texts/s, wall time, including segmentation), one 2,000-character and
  one 200,000-character text (learning reads the first ``learn_max_chars``), and matching a
  200,000-character text.

Reusable pieces (``bench/kernel.py`` imports them; the repository root must be on ``sys.path``):

- :func:`vocabulary` — jieba's dictionary as (words, frequencies), read from the file without
  loading jieba;
- :func:`term_list` — ``n`` distinct noun-like terms (2–4 characters), seeded;
- :func:`build_corpus` — a :class:`Corpus`: global terms and per-group terms (group ids like
  ``"group:100000"``), seeded;
- :func:`realistic_messages` — Chinese chat lines (frequency-weighted words, punctuation, emoji,
  some ASCII), about 60 characters on average, a share of them containing given terms, seeded;
- :func:`load_lexicon` — a DynamicLexicon filled from a corpus.

    .venv/bin/python bench/lexicon.py [--groups 1000] [--runs 5] [--messages 2000] [--seed 7]
                                      [--tracemalloc]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import math
import random
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import ahocorasick

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._measure import rss_mb
from runtime.kernel.lexicon import (
    GLOBAL_KEY,
    DynamicLexicon,
    JiebaSegmenter,
    KeywordSnapshot,
    KeywordTerm,
    LexiconKey,
    LexiconScope,
    LexiconSettings,
    WhitespaceSegmenter,
    normalize_text,
)

EMOJI = [
    "😀",
    "😂",
    "🤣",
    "😅",
    "😭",
    "😡",
    "👍",
    "🙏",
    "🎉",
    "❤️",
    "🐺",
    "🔥",
    "✨",
    "😋",
    "🥺",
    "🤔",
    "👀",
    "💀",
]
PUNCTUATION = ["，", "。", "！", "？", "~", "…", "、", "!", "?", " "]
ASCII_BITS = ["lol", "233", "hhh", "ok", "QQ", "bug", "cpu", "Steam", "666", "GG", "emmm", "xswl"]


@dataclass(frozen=True, slots=True)
class Corpus:
    """Terms for a benchmark lexicon: one global list and one list per group id."""

    global_terms: list[str]
    group_terms: dict[str, list[str]]


@cache
def vocabulary() -> tuple[tuple[str, ...], tuple[float, ...], tuple[str, ...]]:
    """jieba's dictionary: (CJK words of 1–4 characters, their frequencies, their POS tags)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or spec.origin is None:
        raise RuntimeError("jieba is not installed; run the README's set-up first")
    words: list[str] = []
    freqs: list[float] = []
    tags: list[str] = []
    with (Path(spec.origin).parent / "dict.txt").open(encoding="utf-8") as lines:
        for line in lines:
            parts = line.split()
            if len(parts) != 3:
                continue
            word, freq, tag = parts
            if 1 <= len(word) <= 4 and all("\u4e00" <= char <= "\u9fff" for char in word):
                words.append(word)
                freqs.append(float(freq))
                tags.append(tag)
    return tuple(words), tuple(freqs), tuple(tags)


@cache
def _term_pool() -> tuple[tuple[str, ...], tuple[float, ...]]:
    """Nouns of 2–4 characters, weighted by the square root of their frequency (topic words)."""
    words, freqs, tags = vocabulary()
    pool = [
        (w, math.sqrt(f)) for w, f, t in zip(words, freqs, tags, strict=True) if len(w) >= 2 and t[0] == "n"
    ]
    return tuple(w for w, _ in pool), tuple(_cumulative([f for _, f in pool]))


def _cumulative(weights: Sequence[float]) -> list[float]:
    total = 0.0
    out = []
    for weight in weights:
        total += weight
        out.append(total)
    return out


def term_list(n: int, seed: int, *, rng: random.Random | None = None) -> list[str]:
    """``n`` distinct noun-like terms of 2–4 characters drawn from jieba's dictionary."""
    rng = rng or random.Random(seed)
    words, cumulative = _term_pool()
    chosen: dict[str, None] = {}
    while len(chosen) < n:
        for word in rng.choices(words, cum_weights=cumulative, k=n - len(chosen) + 16):
            chosen[word] = None
            if len(chosen) == n:
                break
    return list(chosen)


def build_corpus(
    seed: int = 7, *, global_terms: int = 10_000, groups: int = 1_000, group_terms: int = 500
) -> Corpus:
    """Global terms and ``groups`` groups of ``group_terms`` terms each (groups may share words)."""
    rng = random.Random(seed)
    return Corpus(
        global_terms=term_list(global_terms, seed, rng=rng),
        group_terms={f"group:{100_000 + g}": term_list(group_terms, seed, rng=rng) for g in range(groups)},
    )


def realistic_messages(
    n: int, seed: int = 7, *, terms: Sequence[str] = (), term_rate: float = 0.3, mean_chars: int = 60
) -> list[str]:
    """``n`` chat lines: words by frequency, punctuation, emoji, some ASCII; ``term_rate`` of them
    carry one or two of ``terms``. Lengths are log-normal around ``mean_chars`` (4–400)."""
    rng = random.Random(seed)
    words, freqs, _ = vocabulary()
    cumulative = _cumulative(freqs)
    sigma = 0.6
    mu = math.log(mean_chars) - sigma * sigma / 2
    messages = []
    for _ in range(n):
        target = min(400, max(4, int(rng.lognormvariate(mu, sigma))))
        parts: list[str] = []
        size = 0
        while size < target:
            roll = rng.random()
            if roll < 0.07:
                part = rng.choice(EMOJI)
            elif roll < 0.15:
                part = rng.choice(PUNCTUATION)
            elif roll < 0.18:
                part = rng.choice(ASCII_BITS)
            else:
                part = rng.choices(words, cum_weights=cumulative)[0]
            parts.append(part)
            size += len(part)
        if terms and rng.random() < term_rate:
            for _ in range(rng.randint(1, 2)):
                parts.insert(rng.randrange(len(parts) + 1), rng.choice(terms))
        messages.append("".join(parts))
    return messages


def group_key(chat_id: str) -> LexiconKey:
    return LexiconKey(LexiconScope.GROUP, chat_id)


def load_lexicon(corpus: Corpus, *, now: float = 0.0) -> DynamicLexicon:
    """A lexicon holding the corpus: global terms under GLOBAL_KEY, group terms under their group.

    Loaded the way the bot starts, through ``restore()`` (one key at a time): restored terms count
    as saved, so the lexicon holds no record of unsaved changes, as it would not after the
    periodic ``take_changes()``.
    """
    settings = LexiconSettings(
        max_terms=max([len(t) for t in corpus.group_terms.values()] + [1]),
        max_terms_global=max(1, len(corpus.global_terms)),
    )
    lexicon = DynamicLexicon(settings, segmenter=WhitespaceSegmenter())

    def snapshot(key: LexiconKey, texts: Sequence[str]) -> KeywordSnapshot:
        terms = (KeywordTerm(text, (), 0.5, 0.8, "bench", now, now) for text in texts)
        return KeywordSnapshot(key, tuple(terms))

    keys = [(GLOBAL_KEY, corpus.global_terms)]
    keys += [(group_key(chat_id), texts) for chat_id, texts in corpus.group_terms.items()]
    lexicon.restore(snapshot(key, texts) for key, texts in keys)
    return lexicon


# -- measurement ----------------------------------------------------------------------------------


def per_item_us(run: Callable[[], object], items: int, runs: int) -> float:
    """Median over ``runs`` of the mean µs per item of ``run()``, in this process's CPU time (on a
    shared machine, other processes' load distorts CPU time less than wall time)."""
    samples = []
    for _ in range(runs):
        start = time.process_time_ns()
        run()
        samples.append((time.process_time_ns() - start) / items / 1_000)
    return statistics.median(samples)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def bench_matching(corpus: Corpus, messages: list[str], runs: int) -> None:
    lexicon = load_lexicon(Corpus(corpus.global_terms, {}))
    keys = (GLOBAL_KEY,)  # a kept tuple, as the kernel passes (its key plan is cached)
    lexicon.match("", keys)  # build the automaton outside the timing
    normalized_terms = [normalize_text(term) for term in corpus.global_terms]
    normalized = [normalize_text(message) for message in messages]
    plain = ahocorasick.Automaton(ahocorasick.STORE_ANY)
    for term in normalized_terms:
        plain.add_word(term, term)
    plain.make_automaton()
    n = len(messages)

    def naive() -> None:
        for text in normalized:
            [term for term in normalized_terms if term in text]

    def plain_ac() -> None:
        for text in normalized:
            list(plain.iter(text))

    def match() -> None:
        for message in messages:
            lexicon.match(message, keys)

    def score() -> None:
        for message in messages:
            lexicon.score(message, keys)

    naive_us = per_item_us(naive, n, max(1, runs // 2))
    plain_us = per_item_us(plain_ac, n, runs)
    match_us = per_item_us(match, n, runs)
    score_us = per_item_us(score, n, runs)
    hits = sum(len(lexicon.match(message, keys)) for message in messages) / n
    mean_len = sum(map(len, messages)) / n
    print(f"## matching, {len(corpus.global_terms):,} global terms, {n:,} messages of {mean_len:.0f} chars")
    print(f"   hits per message (all occurrences): {hits:.2f}")
    print(f"   naive `term in text` loop          {naive_us:10.2f} µs/msg")
    print(f"   plain pyahocorasick over str       {plain_us:10.2f} µs/msg   (iteration only)")
    print(
        f"   DynamicLexicon.match               {match_us:10.2f} µs/msg   {naive_us / match_us:6.0f}x naive"
    )
    print(
        f"   DynamicLexicon.score               {score_us:10.2f} µs/msg   {naive_us / score_us:6.0f}x naive"
    )


def bench_scale(corpus: Corpus, messages: list[str], runs: int, *, trace: bool) -> DynamicLexicon:
    gc.collect()
    rss_before = rss_mb()
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    lexicon = load_lexicon(corpus)
    loaded = time.perf_counter() - start
    chat_ids = list(corpus.group_terms)
    start = time.perf_counter()
    for chat_id in chat_ids:
        lexicon.match("", [GLOBAL_KEY, group_key(chat_id)])  # build every automaton
    built = time.perf_counter() - start
    gc.collect()
    stats = lexicon.statistics()
    group_size = len(next(iter(corpus.group_terms.values()), []))
    print(
        f"## scale: {len(chat_ids):,} groups x {group_size:,} terms + {len(corpus.global_terms):,} global"
        f" ({stats.terms:,} terms, {stats.automata:,} automata)"
    )
    print(f"   load {loaded:.1f} s, build every automaton {built:.1f} s")
    print(
        f"   lexicon memory (RSS growth): {rss_mb() - rss_before:.0f} MB;"
        f" process peak RSS {peak_rss_mb():.0f} MB (corpus, vocabulary and interpreter: {rss_before:.0f} MB)"
    )
    if trace:
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"   tracemalloc: {current / 2**20:.0f} MB held, {peak / 2**20:.0f} MB peak")

    rng = random.Random(1)
    asks = [(message, [GLOBAL_KEY, group_key(rng.choice(chat_ids))]) for message in messages]
    n = len(asks)

    def match() -> None:
        for message, keys in asks:
            lexicon.match(message, keys)

    def score() -> None:
        for message, keys in asks:
            lexicon.score(message, keys)

    print(
        f"   per message over global + a random group of {len(chat_ids):,} (cold caches):"
        f" match {per_item_us(match, n, runs):.2f} µs, score {per_item_us(score, n, runs):.2f} µs"
    )
    # Chats come in bursts: 20 messages in a row from one group keep its automaton in cache.
    asks = [
        (message, [GLOBAL_KEY, group_key(chat_ids[(i // 20) % len(chat_ids)])])
        for i, message in enumerate(messages)
    ]
    print(
        f"   per message over global + its group, bursts of 20 from one group:"
        f" match {per_item_us(match, n, runs):.2f} µs, score {per_item_us(score, n, runs):.2f} µs"
    )

    def rebuild(key: LexiconKey) -> float:
        samples = []
        for i in range(max(3, runs)):
            lexicon.add(key, f"重建词{i}", now=1.0)
            start = time.perf_counter()
            lexicon.match("", [key])
            samples.append(time.perf_counter() - start)
            lexicon.remove(key, f"重建词{i}")
        return statistics.median(samples) * 1000

    print(
        f"   automaton rebuild: one group {rebuild(group_key(chat_ids[0])):.2f} ms,"
        f" global {rebuild(GLOBAL_KEY):.1f} ms"
    )
    return lexicon


def bench_maintenance(lexicon: DynamicLexicon) -> None:
    terms = lexicon.statistics().terms
    start = time.perf_counter()
    lexicon.decay(86_400.0)
    decay_s = time.perf_counter() - start
    start = time.perf_counter()
    snapshots = lexicon.snapshot()
    snapshot_s = time.perf_counter() - start
    print(
        f"## maintenance over {terms:,} terms: decay {decay_s * 1000:.0f} ms,"
        f" snapshot {snapshot_s * 1000:.0f} ms ({len(snapshots):,} keys)"
    )


def bench_learning(messages: list[str], runs: int) -> None:
    segmenter = JiebaSegmenter()
    start = time.perf_counter()
    list(segmenter.cut("预热"))
    warm = time.perf_counter() - start
    chats = [group_key(f"group:{g}") for g in range(20)]
    batch: dict[LexiconKey, list[str]] = {key: [] for key in chats}
    for i, message in enumerate(messages):
        batch[chats[i % len(chats)]].append(message)
    samples = []
    for _ in range(max(1, runs // 2)):
        lexicon = DynamicLexicon(LexiconSettings(learn_max_texts=len(messages)), segmenter=segmenter)
        start = time.perf_counter()
        report = lexicon.learn_batch(batch, now=0.0)
        samples.append(time.perf_counter() - start)
    rate = len(messages) / statistics.median(samples)
    print(
        f"## learning (jieba, loaded in {warm:.2f} s): {rate:,.0f} texts/s in batches of {len(messages):,};"
        f" {len(report.created):,} terms created"
    )

    lexicon = DynamicLexicon(segmenter=segmenter)
    key = chats[0]
    short = (messages[0] * 100)[:2_000]
    huge = (messages[0] * 5_000)[:200_000]
    small_us = per_item_us(lambda: lexicon.learn(short, key, 1.0), 1, runs)
    huge_us = per_item_us(lambda: lexicon.learn(huge, key, 1.0), 1, runs)
    match_huge = per_item_us(lambda: lexicon.match(huge, [key]), 1, runs)
    hits = len(lexicon.match(huge, [key]))
    print(f"   learn one 2,000-char text {small_us / 1000:.1f} ms, one 200,000-char text", end=" ")
    print(f"{huge_us / 1000:.1f} ms")
    print(f"   match one 200,000-char text {match_huge / 1000:.1f} ms ({hits:,} hits)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--global-terms", type=int, default=10_000)
    parser.add_argument("--group-terms", type=int, default=500)
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tracemalloc", action="store_true", help="also trace allocations (slow)")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    corpus = build_corpus(
        args.seed, global_terms=args.global_terms, groups=args.groups, group_terms=args.group_terms
    )
    messages = realistic_messages(args.messages, args.seed + 1, terms=corpus.global_terms)
    print(f"corpus and messages generated in {time.perf_counter() - start:.1f} s (seed {args.seed})")
    bench_matching(corpus, messages, args.runs)
    lexicon = bench_scale(corpus, messages, args.runs, trace=args.tracemalloc)
    bench_maintenance(lexicon)
    del lexicon
    gc.collect()
    bench_learning(messages, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
