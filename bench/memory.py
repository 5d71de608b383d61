"""The memory layer over a long conversation: what is sent at the end, and what the summary costs.

    python bench/memory.py [--rounds 60] [--repeat 3]

Plays the scripted conversation of ``tests/support/memory_dialogue.py`` (ten facts in rounds 1–10,
filler, questions from round 55) through the real runtime: an SQLite store in a temporary directory,
the five-layer Context Runtime, the ModelRouter over HTTP to the scripted server on loopback (a 32k
model, so sliding window + memory injection are on), and the MemoryInjector compressing every ten
rounds. Token counts use the scripted server's reference tokenizer (what a provider would bill).

Figures (issue 5):

1. at the last round: prompt tokens sent against the tokens of a prompt carrying the full history
   raw (same persona, every turn, the input) — the ratio — and facts present (target 10/10);
2. the summary's size against the raw tokens of the rounds it replaces (target ≤ 20%);
3. what compression cost: calls and tokens of the compression role beside the chat role's;
4. wall time (medians): ``note_round`` on the reply path, one compression through the loopback model,
   and one round end to end;
5. for each late question, whether the fact it asks about is in the summary, in the retrieved raw
   history, or either — with the faithful compressor and with one whose summary keeps only the four
   newest facts (a rolling summary that forgets: retrieval is why the layer keeps both).

The scripted compressor keeps the planted facts and drops the filler, so figure 2 shows the layer's
mechanics (trimming, folding, injection) with a compressor of known behaviour, not a real model's
compression quality.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime.context.packet import DialogueTurn, MemorySummarySlot, PersonaSlot  # noqa: E402
from runtime.context.render import render_memory_summary, render_stable_prefix, render_turn  # noqa: E402
from runtime.logs import configure_logging  # noqa: E402
from runtime.memory.prompt import COMPRESSION_MARKER  # noqa: E402
from runtime.store.records import StoredMessage  # noqa: E402
from runtime.store.sqlite import DB_FILENAME, SqliteStore  # noqa: E402
from tests.support.memory_dialogue import (  # noqa: E402
    CHAT,
    FACTS,
    Dialogue,
    dialogue_config,
    fact_compressor,
    forgetful_compressor,
)
from tests.support.openai_server import (  # noqa: E402
    Responder,
    ScriptedOpenAIServer,
    reference_prompt_tokens,
    reference_token_count,
)

CHAT_REPLY = "好的，我的看法是先把要点列出来，再一步步来，不要着急。有需要随时叫我。"


def _turn(message: StoredMessage) -> dict[str, str]:
    if message.from_self:
        return {"role": "assistant", "content": message.text}
    return {"role": "user", "content": f"{message.sender_name}: {message.text}"}


def _section(text: str, title: str) -> str:
    """One ``# title`` section of the context system message ('' when absent)."""
    parts = text.split(f"# {title}", 1)
    return parts[1].split("\n\n#", 1)[0] if len(parts) == 2 else ""


def asked_fact_sources(sent_per_round: list[list[dict[str, str]]]) -> dict[str, int]:
    """For each question round (55+): is the fact asked about in the summary, the retrieved items, either?"""
    counts = {"rounds": 0, "summary": 0, "retrieved": 0, "either": 0}
    for n, sent in enumerate(sent_per_round, start=1):
        if n < 55:
            continue
        context = next((m["content"] for m in sent[1:] if m["role"] == "system"), "")
        marker = FACTS[(n - 55) % len(FACTS)].marker
        in_summary = marker in _section(context, "记忆摘要")
        in_retrieved = marker in _section(context, "相关记忆")
        counts["rounds"] += 1
        counts["summary"] += in_summary
        counts["retrieved"] += in_retrieved
        counts["either"] += in_summary or in_retrieved
    return counts


async def one_run(rounds: int, workdir: Path, compressor: Responder = fact_compressor) -> dict[str, float]:
    with ScriptedOpenAIServer() as server:
        server.respond_with(compressor)
        server.load({"default": {"text": CHAT_REPLY}})
        store = await SqliteStore.open(workdir / DB_FILENAME)
        dialogue = Dialogue(store, dialogue_config(server.base_url), data_dir=workdir)
        injector = dialogue.layer.injector
        note_times: list[float] = []
        compress_times: list[float] = []
        round_times: list[float] = []
        original_note = injector.note_round
        original_run = injector.run_pending

        async def timed_note(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            result = await original_note(*args, **kwargs)  # type: ignore[arg-type]
            note_times.append(time.perf_counter() - start)
            return result

        async def timed_run(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            outcomes = await original_run(*args, **kwargs)  # type: ignore[arg-type]
            if outcomes:
                compress_times.append(time.perf_counter() - start)
            return outcomes

        injector.note_round = timed_note  # type: ignore[method-assign,assignment]
        injector.run_pending = timed_run  # type: ignore[method-assign,assignment]
        try:
            sent_per_round = []
            for _ in range(rounds):
                start = time.perf_counter()
                sent_per_round.append(await dialogue.step())
                round_times.append(time.perf_counter() - start)

            last = sent_per_round[-1]
            sent_tokens = reference_prompt_tokens(last)
            history = await store.list_messages(CHAT.chat_id, limit=10 * rounds)
            *before, last_input = [m for m in history if m.time <= dialogue.now]
            persona = render_stable_prefix(PersonaSlot.from_config(dialogue.config.persona), None)
            full = [{"role": "system", "content": persona}, *(_turn(m) for m in before), _turn(last_input)]
            full_tokens = reference_prompt_tokens(full)
            late = sent_per_round[54:] if rounds >= 55 else sent_per_round[-1:]
            facts_min = min(
                sum(f.marker in "\n".join(m["content"] for m in sent) for f in FACTS) for sent in late
            )

            document = await injector.document(CHAT.chat_id)
            slot = MemorySummarySlot.from_summary(document.to_json(), injector.settings.priority)
            summary_tokens = reference_token_count(render_memory_summary(slot)) if slot.sections else 0
            covered = [m for m in history if document.covered_until and m.time <= document.covered_until]
            replaced_tokens = sum(reference_token_count(render_turn_of(m)) for m in covered)

            compressions = [r for r in server.chat_requests if COMPRESSION_MARKER in r.all_text]
            served = dialogue.router.statistics().served
            by_role = {s.role: s for s in served}
            chat_role, compression_role = by_role.get("chat"), by_role.get("compression")
        finally:
            await dialogue.aclose()
            await store.close()
    sources = asked_fact_sources(sent_per_round)
    return {
        **{f"asked_{key}": value for key, value in sources.items()},
        "rounds": rounds,
        "sent_tokens": sent_tokens,
        "full_tokens": full_tokens,
        "ratio": sent_tokens / full_tokens,
        "facts_min": facts_min,
        "summary_tokens": summary_tokens,
        "replaced_tokens": replaced_tokens,
        "summary_share": summary_tokens / replaced_tokens if replaced_tokens else 0.0,
        "summary_rounds": document.total_rounds_processed,
        "compressions": len(compressions),
        "compression_tokens": (compression_role.prompt_tokens + compression_role.completion_tokens)
        if compression_role
        else 0,
        "chat_tokens": (chat_role.prompt_tokens + chat_role.completion_tokens) if chat_role else 0,
        "note_ms": statistics.median(note_times) * 1000,
        "compress_ms": statistics.median(compress_times) * 1000 if compress_times else 0.0,
        "round_ms": statistics.median(round_times) * 1000,
    }


def render_turn_of(message: StoredMessage) -> str:
    """A stored message as the assembler renders a raw dialogue turn."""
    turn = DialogueTurn(message.sender_id, message.sender_name, message.text, message.time, message.from_self)
    return render_turn(turn)["content"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3, help="runs; timings are medians over all")
    args = parser.parse_args()
    configure_logging(level="WARNING")
    runs = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as directory:
            runs.append(asyncio.run(one_run(args.rounds, Path(directory))))
    r = runs[-1]
    med = {key: statistics.median(run[key] for run in runs) for key in ("note_ms", "compress_ms", "round_ms")}
    print(
        f"memory layer over {r['rounds']:.0f} rounds ({args.repeat} runs; tokens by the reference tokenizer)"
    )
    print(
        f"  prompt at round {r['rounds']:.0f}: {r['sent_tokens']:.0f} tokens sent vs {r['full_tokens']:.0f} "
        f"with the full history raw  ratio {r['ratio']:.3f}"
    )
    print(f"  facts present at rounds 55-{r['rounds']:.0f}: {r['facts_min']:.0f}/{len(FACTS)} (worst round)")
    print(
        f"  summary: {r['summary_tokens']:.0f} tokens for rounds 1-{r['summary_rounds']:.0f} "
        f"({r['replaced_tokens']:.0f} raw tokens)  share {r['summary_share']:.1%}  (target <= 20%)"
    )
    print(
        f"  compression: {r['compressions']:.0f} calls, {r['compression_tokens']:.0f} tokens "
        f"vs chat {r['chat_tokens']:.0f} tokens ({r['compression_tokens'] / max(1, r['chat_tokens']):.1%})"
    )
    print(
        f"  wall time (median): note_round {med['note_ms']:.2f} ms, compression {med['compress_ms']:.1f} ms "
        f"(loopback model), round end to end {med['round_ms']:.1f} ms"
    )
    if args.rounds >= 55:
        lossy = asyncio.run(_forgetful(args.rounds))
        print("  the fact each late question asks about, found in the prompt (rounds 55+):")
        for label, run in (("faithful summary", r), ("summary keeping 4 facts", lossy)):
            print(
                f"    {label:<24} summary {run['asked_summary']:.0f}/{run['asked_rounds']:.0f}  "
                f"retrieval {run['asked_retrieved']:.0f}/{run['asked_rounds']:.0f}  "
                f"either {run['asked_either']:.0f}/{run['asked_rounds']:.0f}"
            )
    return 0 if r["facts_min"] == len(FACTS) else 1


async def _forgetful(rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as directory:
        return await one_run(rounds, Path(directory), forgetful_compressor(4))


if __name__ == "__main__":
    raise SystemExit(main())
