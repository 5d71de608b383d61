"""A conversation's model calls: over the kept connection, or over a new one each time.

A person talking with the bot sends the next @ some seconds after the last answer. The model client
keeps its idle connection to the provider ``[[models.providers]] keepalive_ms`` (90 s by default);
httpx's own default, which the client used before, is 5 s. Past it, the next call first opens a new
connection: to a real provider, a DNS lookup, one round trip for TCP and one or two for TLS, before
the request goes out.

The bench runs ``--calls`` chat calls ``--gap`` seconds apart through ``ChatClient`` against the
scripted OpenAI-compatible server on loopback (answering at once), once per keepalive in
``--keepalive``, and prints each call's latency and how many connections the server saw. Loopback
has no round trip to speak of (this machine's kernel has no netem to add one), so the latencies show
only the local cost of a new connection; the count says how many handshakes a real network would
have charged.

    .venv/bin/python bench/model_connection.py [--gap 8] [--calls 6] [--keepalive 5 90]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.llm.client import ChatClient, RetryPolicy  # noqa: E402
from tests.support.openai_server import ScriptedOpenAIServer  # noqa: E402

MESSAGES = [{"role": "user", "content": "灰风，刚才那个问题再说说？"}]


async def conversation(base_url: str, keepalive: float, calls: int, gap: float) -> list[float]:
    """Each call's latency (ms), ``gap`` seconds between an answer and the next call."""
    client = ChatClient(
        base_url=base_url, model="scripted-chat", keepalive=keepalive, retry=RetryPolicy(max_retries=0)
    )
    spans: list[float] = []
    try:
        for number in range(calls):
            if number:
                await anyio.sleep(gap)
            started = time.perf_counter()
            await client.chat(MESSAGES)
            spans.append((time.perf_counter() - started) * 1000)
    finally:
        await client.aclose()
    return spans


def run(args: argparse.Namespace, where: str) -> None:
    print(
        f"{args.calls} calls {args.gap:g} s apart, {where}; the server answers at once (plain HTTP)",
        flush=True,
    )
    for keepalive in args.keepalive:
        with ScriptedOpenAIServer() as server:
            server.push(*({"text": "好"} for _ in range(args.calls)))
            spans = anyio.run(conversation, server.base_url, keepalive, args.calls, args.gap)
            opened = server.connections_opened
        later = spans[1:]
        print(
            f"  keepalive {keepalive:5g} s: first call {spans[0]:6.1f} ms; the next {len(later)}:"
            f" median {statistics.median(later):6.1f} ms, max {max(later):6.1f} ms;"
            f" connections opened {opened} ({', '.join(f'{s:.1f}' for s in spans)})",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gap", type=float, default=8.0, help="seconds from an answer to the next call")
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--keepalive", type=float, nargs="+", default=[5.0, 90.0], help="seconds, a run each")
    args = parser.parse_args(argv)
    if args.calls < 2:
        parser.error("--calls must be at least 2")
    run(args, "loopback")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
