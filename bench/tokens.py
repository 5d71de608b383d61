"""Estimate error of the offline token counter against the scripted server's reference tokenizer.

    python bench/tokens.py [--lines N]

Corpora: Chinese and mixed Chinese/ASCII lines from the design seeds (``../shared/seeds``), English
chat lines from the IRC corpus (``../shared/data/disentangle``). Three measurements:

1. per text: estimate / reference - 1 (median, p10, p90, worst under, share under by more than 10%);
2. per request, through a real loopback server: ``TokenEstimator.raw_messages`` against the
   ``usage.prompt_tokens`` the server reports, raw and after calibrating on the first half;
3. the same against a server whose tokenizer packs Chinese at 0.6 tokens a character (Qwen-like):
   calibration may lower the estimate by at most 10%, so it stays high there by design.

Targets (issue 5): within ±15%, never under by more than 10%. Also prints the counter's speed.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime.llm.client import ChatClient, RetryPolicy  # noqa: E402
from runtime.llm.tokens import TokenEstimator  # noqa: E402
from tests.support.openai_server import (  # noqa: E402
    ScriptedOpenAIServer,
    reference_prompt_tokens,
    reference_token_count,
    reference_tokens,
)

SHARED = ROOT.parent / "shared"
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_IRC = re.compile(r"^\[\d\d:\d\d\] <[^>]+> (.+)$")

FALLBACK = [
    "灰风，帮我记一下：周五下午三点开会，地点在三楼会议室。",
    "明天用 Python 3.11 跑一下 benchmark，看看 P99 延迟。",
    "OneBot v11 的反向 WebSocket 地址是 /onebot/v11/ws 吗？",
    "I think the package is broken on dapper, try apt-get update first",
]


def cjk_share(text: str) -> float:
    visible = [c for c in text if not c.isspace()]
    return sum(1 for c in visible if _CJK.match(c)) / len(visible) if visible else 0.0


def load_corpora(limit: int) -> dict[str, list[str]]:
    seed_lines: list[str] = []
    for path in sorted((SHARED / "seeds").glob("*.txt")):
        seed_lines += [
            line.strip() for line in path.read_text(encoding="utf-8").splitlines() if len(line.strip()) >= 8
        ]
    chinese = [line for line in seed_lines if cjk_share(line) >= 0.7]
    mixed = [line for line in seed_lines if 0.15 <= cjk_share(line) < 0.7 and re.search(r"[A-Za-z]", line)]
    english: list[str] = []
    for path in sorted((SHARED / "data" / "disentangle" / "dev").glob("*.raw.txt")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            match = _IRC.match(line)
            if match and len(match.group(1)) >= 8:
                english.append(match.group(1))
    corpora = {"chinese": chinese[:limit], "mixed": mixed[:limit], "english": english[:limit]}
    for name, texts in corpora.items():
        if not texts:
            corpora[name] = FALLBACK
            print(f"(corpus {name!r} not found under {SHARED}; using a built-in sample)")
    return corpora


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def describe(errors: Sequence[float]) -> str:
    under = sum(1 for e in errors if e < -0.10) / len(errors)
    within = sum(1 for e in errors if abs(e) <= 0.15) / len(errors)
    spread = f"p10 {pct(errors, 0.1):+6.1%}  p90 {pct(errors, 0.9):+6.1%}"
    return (
        f"median {statistics.median(errors):+6.1%}  {spread}  "
        f"worst under {min(errors):+6.1%}  within ±15% {within:6.1%}  under >10% {under:5.1%}"
    )


def per_text(estimator: TokenEstimator, corpora: dict[str, list[str]]) -> None:
    print("1. per text: estimate / reference - 1")
    for name, texts in corpora.items():
        errors = [
            estimator.count_text(t) / reference_token_count(t) - 1 for t in texts if reference_token_count(t)
        ]
        total = sum(estimator.count_text(t) for t in texts) / sum(reference_token_count(t) for t in texts) - 1
        print(f"   {name:8} n={len(errors):4}  {describe(errors)}  aggregate {total:+6.1%}")


def conversations(texts: list[str], size: int = 8) -> list[list[dict[str, str]]]:
    requests = []
    for start in range(0, len(texts) - size + 1, size):
        messages = [{"role": "system", "content": "你是灰风，一个群聊里的成员。说话简洁。"}]
        for i, text in enumerate(texts[start : start + size]):
            messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
        requests.append(messages)
    return requests


async def per_request(corpora: dict[str, list[str]], tokenizer: Callable[[str], int], title: str) -> None:
    print(title)
    with ScriptedOpenAIServer({"default": {"text": "好"}}, tokenizer=tokenizer) as server:
        client = ChatClient(base_url=server.base_url, model="bench", retry=RetryPolicy(max_retries=0))
        try:
            for name, texts in corpora.items():
                estimator = TokenEstimator()
                requests = conversations(texts)
                if len(requests) < 2:
                    continue
                half = len(requests) // 2
                raw_errors, calibrated_errors = [], []
                for index, messages in enumerate(requests):
                    raw = estimator.raw_messages(messages)
                    calibrated = estimator.estimate_messages(messages, model="bench")
                    usage = (await client.chat(messages)).usage
                    assert usage is not None
                    raw_errors.append(raw / usage.prompt_tokens - 1)
                    if index < half:
                        estimator.observe("bench", raw, usage.prompt_tokens)
                    else:
                        calibrated_errors.append(calibrated / usage.prompt_tokens - 1)
                factor = estimator.correction("bench")
                print(f"   {name:8} n={len(requests):3}  raw         {describe(raw_errors)}")
                print(f"   {'':8} {'':5}  calibrated  {describe(calibrated_errors)}  factor {factor:.3f}")
        finally:
            await client.aclose()


def dense_tokenizer(text: str) -> int:
    """Like the reference, but Chinese runs cost 0.6 tokens a character (Qwen/DeepSeek-like)."""
    total = 0.0
    for piece in reference_tokens(text):
        total += 0.6 if _CJK.match(piece) else 1.0
    return math.ceil(total)


def speed(estimator: TokenEstimator, corpora: dict[str, list[str]]) -> None:
    texts = [t for texts in corpora.values() for t in texts]
    chars = sum(len(t) for t in texts)
    runs = []
    for _ in range(7):
        started = time.perf_counter()
        for text in texts:
            estimator.count_text(text)
        runs.append(time.perf_counter() - started)
    median = statistics.median(runs)
    print(f"4. speed: {len(texts)} texts, {chars} chars: median {median * 1000:.2f} ms "
          f"({chars / median / 1e6:.2f} M chars/s, {len(texts) / median:,.0f} texts/s)")  # fmt: skip
    messages = conversations(texts)[0]
    runs = []
    for _ in range(7):
        started = time.perf_counter()
        for _ in range(1000):
            estimator.raw_messages(messages)
        runs.append((time.perf_counter() - started) / 1000)
    print(f"   raw_messages of an 8-message request: median {statistics.median(runs) * 1e6:.1f} µs")
    assert reference_prompt_tokens(messages) > 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--lines", type=int, default=400, help="texts per corpus (default 400)")
    args = parser.parse_args()
    corpora = load_corpora(args.lines)
    estimator = TokenEstimator()
    print("corpora: " + ", ".join(f"{k} {len(v)} texts" for k, v in corpora.items()))
    per_text(estimator, corpora)
    asyncio.run(
        per_request(corpora, reference_token_count, "2. per request vs the server's usage (reference)")
    )
    asyncio.run(
        per_request(corpora, dense_tokenizer, "3. per request vs a dense-Chinese tokenizer (0.6/char)")
    )
    speed(estimator, corpora)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
