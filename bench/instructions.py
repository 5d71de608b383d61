"""Instructions per message, under callgrind: steady where wall time on a loaded machine is not.

Times the same realistic chat as ``bench/kernel.py`` (fewer groups, so a short run reaches a busy
steady state) through one part of the kernel: ``terms`` (``extract_terms`` alone), ``tracker``
(``ThreadTracker.assign``) or ``ingest`` (``Kernel.ingest`` with the bench's lexicon). Each part runs
twice under ``valgrind --tool=callgrind``, after the same warm-up, once over N messages and once over
2N; the difference of the two totals over N is the cost of a message, start-up and warm-up cancelled.

    .venv/bin/python bench/instructions.py [--part terms tracker ingest] [--messages 500] [--warm 2000]

``--root`` measures another checkout's ``runtime`` (an older commit unpacked with ``git archive``).
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _generate(path: Path, total: int, groups: int, seed: int) -> None:
    """The corpus and messages, written once (jieba's word list is slow to read under callgrind)."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    import kernel as kernel_bench  # bench/kernel.py

    lexbench = kernel_bench.lexbench
    corpus = lexbench.build_corpus(seed, global_terms=10_000, groups=groups, group_terms=500)
    texts = lexbench.realistic_messages(total, seed + 1, terms=corpus.global_terms)
    idents = [chat_id.partition(":")[2] for chat_id in corpus.group_terms]
    messages = kernel_bench.chat_stream(texts, idents, seed + 2)
    rows = [
        (m.message_id, m.chat_ident, m.sender_id, m.time, m.text, m.mentions, m.reply_to, m.addressed)
        for m in messages
    ]
    path.write_bytes(pickle.dumps((corpus.global_terms, corpus.group_terms, rows)))


def _settle() -> None:
    """Collect and freeze what the warm-up made: a full collection walking the lexicon in one run and
    not the other would swamp the difference of the two runs."""
    gc.collect()
    gc.freeze()


def _measured(path: Path, part: str, warm: int, count: int) -> None:
    """Run inside callgrind: warm up on the first ``warm`` messages, then take ``count`` more."""
    from runtime.kernel.message import ChatKind, ChatMessage

    global_terms, group_terms, rows = pickle.loads(path.read_bytes())
    messages = [
        ChatMessage(i, ChatKind.GROUP, chat, sender, sender, t, text, mentions, reply, addressed)
        for i, chat, sender, t, text, mentions, reply, addressed in rows[: warm + count]
    ]
    head, tail = messages[:warm], messages[warm:]
    if part == "terms":
        from runtime.kernel._features import extract_terms

        for message in head:
            extract_terms(message.text, 1_000, 16)
        _settle()
        for message in tail:
            extract_terms(message.text, 1_000, 16)
        return
    if part == "tracker":
        from runtime.kernel.threads import ThreadTracker

        tracker = ThreadTracker()
        for message in head:
            tracker.assign(message)
        _settle()
        for message in tail:
            tracker.assign(message)
        return
    from runtime.kernel.kernel import Kernel
    from runtime.kernel.lexicon import GLOBAL_KEY, LexiconKey, LexiconScope
    from runtime.kernel.lexicon.learning import WhitespaceSegmenter
    from runtime.kernel.lexicon.lexicon import DynamicLexicon
    from runtime.kernel.lexicon.settings import LexiconSettings
    from runtime.kernel.lexicon.terms import KeywordSnapshot, KeywordTerm
    from runtime.kernel.settings import KernelSettings

    settings = LexiconSettings(max_terms=500, max_terms_global=len(global_terms))
    lexicon = DynamicLexicon(settings, segmenter=WhitespaceSegmenter())

    def snapshot(key: LexiconKey, texts: list[str]) -> KeywordSnapshot:
        return KeywordSnapshot(key, tuple(KeywordTerm(t, (), 0.5, 0.8, "bench", 0.0, 0.0) for t in texts))

    keys = [(GLOBAL_KEY, global_terms)]
    keys += [(LexiconKey(LexiconScope.GROUP, chat_id), texts) for chat_id, texts in group_terms.items()]
    lexicon.restore(snapshot(key, texts) for key, texts in keys)
    kernel = Kernel(
        KernelSettings(self_ids=("10001",), lexicon=lexicon.settings),
        lexicon=lexicon,
        segmenter=WhitespaceSegmenter(),
    )
    for message in head:
        kernel.ingest(message)
    kernel.due(head[-1].time)
    _settle()
    for message in tail:
        kernel.ingest(message)


def _instructions(root: Path, data: Path, part: str, warm: int, count: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=str(root))
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                str(Path(__file__).resolve()),
                "--child",
                str(data),
                part,
                str(warm),
                str(count),
            ],
            cwd=root,
            env=env,
            check=False,
            capture_output=True,
        )
        if proc.returncode:
            raise RuntimeError(proc.stderr.decode("utf-8", "replace")[-3_000:])
        summary = re.search(r"^summary:\s*(\d+)", out.read_text(errors="replace"), re.MULTILINE)
        if summary is None:
            raise RuntimeError("no summary line in callgrind's output")
        return int(summary.group(1))


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        data, part, warm, count = sys.argv[2:6]
        here = Path(__file__).resolve().parent  # bench/, whose runtime.py is not the package
        sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
        _measured(Path(data), part, int(warm), int(count))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--part", nargs="+", choices=["terms", "tracker", "ingest"], default=["terms", "tracker"]
    )
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--warm", type=int, default=2_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(tempfile.gettempdir()) / "greywind-instructions.pickle",
        help="the generated messages, made once and reused (delete it after changing the options)",
    )
    args = parser.parse_args()
    data = args.data
    if not data.exists():
        _generate(data, args.warm + 2 * args.messages, args.groups, args.seed)
    for part in args.part:
        once = _instructions(args.root.resolve(), data, part, args.warm, args.messages)
        twice = _instructions(args.root.resolve(), data, part, args.warm, 2 * args.messages)
        print(f"{part:8s} {(twice - once) / args.messages / 1_000:9.1f} k instructions per message")
    return 0


if __name__ == "__main__":
    sys.exit(main())
