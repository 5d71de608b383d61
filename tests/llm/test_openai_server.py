"""The scripted server itself: rules, defaults, the control endpoints, and the standalone process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from tests.support.openai_server import ScriptedOpenAIServer, reference_token_count, reference_tokens

ROOT = Path(__file__).resolve().parents[2]


def ask(client: httpx.Client, text: str, **body: object) -> httpx.Response:
    payload = {"model": "m", "messages": [{"role": "user", "content": text}], **body}
    return client.post("/chat/completions", json=payload)


def test_reference_tokenizer_is_the_documented_one() -> None:
    assert reference_tokens("灰风 tokenization 12345，ok!") == [
        "灰", "风", "toke", "niza", "tion", "123", "45", "，", "ok", "!",
    ]  # fmt: skip
    assert reference_token_count("  \n ") == 0


def test_rules_match_before_the_queue_and_run_out() -> None:
    script = {
        "chat": [{"text": "from the queue"}],
        "rules": [{"when": {"contains": "天气"}, "reply": {"text": "晴"}, "times": 1}],
        "default": {"echo": True},
    }
    with ScriptedOpenAIServer(script) as server, httpx.Client(base_url=server.base_url) as client:
        answers = [
            ask(client, text).json()["choices"][0]["message"]["content"] for text in ("天气?", "天气?", "hi")
        ]
    assert answers == ["晴", "from the queue", "echo: hi"]


def test_an_empty_script_answers_500_so_a_missing_answer_is_loud() -> None:
    with ScriptedOpenAIServer() as server, httpx.Client(base_url=server.base_url) as client:
        response = ask(client, "hello")
    assert response.status_code == 500
    assert "script exhausted" in response.json()["error"]["message"]


def test_responder_decides_and_can_fall_through() -> None:
    with (
        ScriptedOpenAIServer([{"text": "queued"}]) as server,
        httpx.Client(base_url=server.base_url) as client,
    ):
        server.respond_with(lambda request: {"text": "tools!"} if request.tools else None)
        with_tools = ask(client, "x", tools=[{"type": "function", "function": {"name": "reply"}}])
        without = ask(client, "y")
    assert with_tools.json()["choices"][0]["message"]["content"] == "tools!"
    assert without.json()["choices"][0]["message"]["content"] == "queued"


def test_control_endpoints_push_and_report() -> None:
    with ScriptedOpenAIServer() as server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}") as client:
        assert client.post("/_control/push", json={"chat": [{"text": "pushed"}]}).json()["pending"] == 1
        assert client.post("/v1/completions", json={}).status_code == 404  # legacy API: not served
        response = client.post("/v1/chat/completions", json={"model": "m", "messages": []})
        recorded = client.get("/_control/requests").json()
        assert client.post("/_control/push", json={"bogus": 1}).status_code == 400
    assert response.json()["choices"][0]["message"]["content"] == "pushed"
    assert [r["path"] for r in recorded] == ["/v1/chat/completions"]


@pytest.mark.e2e
def test_standalone_process_serves_a_script_and_stops_on_sigterm(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "来自脚本"}]), encoding="utf-8")
    record = tmp_path / "requests.jsonl"
    command = [sys.executable, "-m", "tests.support.openai_server", "--port", "0", "--script", str(script)]
    process = subprocess.Popen(
        [*command, "--record", str(record)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline().strip()
        assert banner.startswith("listening on http://127.0.0.1:")
        base_url = banner.removeprefix("listening on ")
        with httpx.Client(base_url=base_url) as client:
            answer = ask(client, "你好").json()
        assert answer["choices"][0]["message"]["content"] == "来自脚本"
        assert answer["usage"]["prompt_tokens"] > 0
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
    (line,) = record.read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["body"]["messages"] == [{"role": "user", "content": "你好"}]


@pytest.mark.asyncio
async def test_concurrent_requests_are_each_answered_and_recorded() -> None:
    script = {"default": {"echo": True}}
    answers: dict[int, str] = {}
    with ScriptedOpenAIServer(script) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as client:

            async def one(i: int) -> None:
                payload = {"model": "m", "messages": [{"role": "user", "content": f"第{i}条"}]}
                response = await client.post("/chat/completions", json=payload)
                answers[i] = response.json()["choices"][0]["message"]["content"]

            async with anyio.create_task_group() as group:
                for i in range(24):
                    group.start_soon(one, i)
        assert len(server.chat_requests) == 24
    assert answers == {i: f"echo: 第{i}条" for i in range(24)}
