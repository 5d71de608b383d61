"""A scripted OpenAI-compatible server on loopback: a real HTTP server for tests and end-to-end runs.

It serves ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` (the ``/v1`` prefix is optional),
answers each request from a script, records every request body it received (so tests can assert what
the model was *sent*), and reports ``usage`` counted by :func:`reference_token_count`, a known
deterministic tokenizer, so the runtime's token estimate can be measured against it.

In tests (see the ``openai_server`` fixture in ``tests/conftest.py``)::

    server.push({"text": "你好"}, {"status": 429, "headers": {"Retry-After": "1"}})
    client = ChatClient(base_url=server.base_url, ...)
    ...
    assert server.chat_requests[0].messages[-1]["content"] == "..."

As a process (end-to-end runs)::

    python -m tests.support.openai_server --port 0 --script FILE.json [--record FILE.jsonl]

prints ``listening on http://127.0.0.1:<port>/v1`` once ready and stops cleanly on SIGTERM / Ctrl-C.
``--record`` appends each request as one JSON line. The control endpoints ``GET /_control/requests``,
``POST /_control/push`` (a script object, appended) and ``POST /_control/reset`` let a test in
another process read the record and script more answers.

Script format (JSON; a bare list means ``{"chat": [...]}``)::

    {
      "chat":       [STEP, ...],   # chat answers, one per request, in order
      "embeddings": [STEP, ...],   # embedding answers; when empty, vectors are computed (below)
      "rules": [                   # consulted before the queue; first match wins
        {"when": {"contains": "天气"}, "reply": STEP, "times": 2}   # times omitted: unlimited
      ],
      "default": STEP,             # when the chat queue is empty; omitted: 500 "script exhausted"
      "embedding_dimensions": 16
    }

    STEP keys (all optional):
      "text": "..."                        assistant content
      "tool_calls": [{"name": "reply", "arguments": {"text": "hi"}, "id": "call_1"}]
                                           arguments: an object, or a string sent verbatim (bad JSON)
      "finish_reason": "stop"              default "tool_calls" when there are tool calls, else "stop"
      "usage": {...} | false               replaces the computed usage; false omits it
      "model": "..."                       the model named in the answer (default: the request's)
      "echo": true                         text = "echo: " + the last user message
      "status": 500                        an error status; the body is an OpenAI error object
      "headers": {"Retry-After": "2"}      extra response headers
      "delay": 1.5                         seconds to wait before answering (to provoke timeouts)
      "raw": "not json{"                   this exact body (status 200 unless "status" says otherwise)
      "close": true                        drop the connection without answering
      "embeddings": [[0.1, ...], ...]      (embedding steps) these vectors instead of computed ones

    "when" conditions (all given must hold): "contains" (in the last user message),
    "any_contains" (in any message), "system_contains", "model", "has_tools" (bool).

Computed embeddings are a normalised bag of hashed reference tokens: texts sharing words are close.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import re
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "RecordedRequest",
    "ScriptedOpenAIServer",
    "reference_prompt_tokens",
    "reference_token_count",
    "reference_tokens",
]

Step = Mapping[str, Any]
Responder = Callable[["RecordedRequest"], Step | None]

# --------------------------------------------------------------------------------------------------
# The reference tokenizer: one token per CJK character, per four ASCII letters of a word (rounded up),
# per three digits, per punctuation mark or other symbol; whitespace is free. Close to what BPE
# vocabularies do with Chinese and English, and exactly reproducible.

_PIECE = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff]"
    r"|[A-Za-z]+|[0-9]+|\S",
)
MESSAGE_OVERHEAD = 3
REPLY_PRIMING = 3


def reference_tokens(text: str) -> list[str]:
    """The reference tokenizer's pieces of ``text``."""
    pieces: list[str] = []
    for match in _PIECE.finditer(text):
        piece = match.group()
        if piece.isascii() and piece.isalpha():
            pieces.extend(piece[i : i + 4] for i in range(0, len(piece), 4))
        elif piece.isascii() and piece.isdigit():
            pieces.extend(piece[i : i + 3] for i in range(0, len(piece), 3))
        else:
            pieces.append(piece)
    return pieces


def reference_token_count(text: str) -> int:
    return len(reference_tokens(text))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def reference_prompt_tokens(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Any] | None = None,
    count: Callable[[str], int] = reference_token_count,
) -> int:
    """Prompt tokens as this server reports them: content, names, tool calls, overheads, tool schemas."""
    total = REPLY_PRIMING
    for message in messages:
        total += MESSAGE_OVERHEAD + count(_content_text(message.get("content")))
        if message.get("name"):
            total += count(str(message["name"]))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            total += count(str(function.get("name", ""))) + count(str(function.get("arguments", "")))
    if tools:
        total += count(json.dumps(list(tools), ensure_ascii=False))
    return total


# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server received; ``body`` is the parsed JSON (``None`` if it was not JSON)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    at: float

    @property
    def kind(self) -> str:
        if self.path.endswith("/chat/completions"):
            return "chat"
        if self.path.endswith("/embeddings"):
            return "embeddings"
        return "other"

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", ())) if isinstance(self.body, dict) else []

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        return self.body.get("tools") if isinstance(self.body, dict) else None

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""

    @property
    def all_text(self) -> str:
        return "\n".join(_content_text(m.get("content")) for m in self.messages)

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "body": self.body, "at": self.at}


@dataclass(slots=True)
class _Rule:
    when: Mapping[str, Any]
    reply: Step
    times: int | None

    def matches(self, request: RecordedRequest) -> bool:
        when = self.when
        if "contains" in when and str(when["contains"]) not in request.last_user_text:
            return False
        if "any_contains" in when and str(when["any_contains"]) not in request.all_text:
            return False
        if "system_contains" in when:
            system = "\n".join(
                _content_text(m.get("content")) for m in request.messages if m.get("role") == "system"
            )
            if str(when["system_contains"]) not in system:
                return False
        if "model" in when and when["model"] != request.model:
            return False
        return not ("has_tools" in when and bool(when["has_tools"]) != bool(request.tools))


_EXHAUSTED: Step = {"status": 500, "error": "script exhausted: no answer queued for this request"}


@dataclass(slots=True)
class _Script:
    chat: deque[Step] = field(default_factory=deque)
    embeddings: deque[Step] = field(default_factory=deque)
    rules: list[_Rule] = field(default_factory=list)
    default: Step | None = None
    embedding_dimensions: int = 16

    def extend(self, script: Mapping[str, Any] | Sequence[Step]) -> None:
        if isinstance(script, Sequence) and not isinstance(script, (str, bytes)):
            script = {"chat": list(script)}
        if not isinstance(script, Mapping):
            raise ValueError("a script is a JSON object or a list of steps")
        unknown = set(script) - {"chat", "embeddings", "rules", "default", "embedding_dimensions"}
        if unknown:
            raise ValueError(f"unknown script keys: {sorted(unknown)}")
        self.chat.extend(script.get("chat", ()))
        self.embeddings.extend(script.get("embeddings", ()))
        for rule in script.get("rules", ()):
            self.rules.append(_Rule(rule.get("when", {}), rule["reply"], rule.get("times")))
        if "default" in script:
            self.default = script["default"]
        if "embedding_dimensions" in script:
            self.embedding_dimensions = int(script["embedding_dimensions"])


class ScriptedOpenAIServer:
    """The server; ``start()``/``stop()`` or use it as a context manager. Thread-safe."""

    def __init__(
        self,
        script: Mapping[str, Any] | Sequence[Step] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tokenizer: Callable[[str], int] = reference_token_count,
        record_path: Path | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._script = _Script()
        if script is not None:
            self._script.extend(script)
        self._responder: Responder | None = None
        self._requests: list[RecordedRequest] = []
        self._tokenizer = tokenizer
        self._record_path = record_path
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._opened = 0  # connections accepted so far
        self._httpd = _HTTPServer((host, port), _Handler, self)
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedOpenAIServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake delayed answers, drop open connections, release the port."""
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- scripting --------------------------------------------------------------------------------

    def push(self, *steps: Step) -> None:
        """Queue chat answers, in order."""
        with self._lock:
            self._script.chat.extend(steps)

    def push_embeddings(self, *steps: Step) -> None:
        with self._lock:
            self._script.embeddings.extend(steps)

    def load(self, script: Mapping[str, Any] | Sequence[Step]) -> None:
        """Append a whole script (the file format above)."""
        with self._lock:
            self._script.extend(script)

    def respond_with(self, responder: Responder | None) -> None:
        """Let a callable decide each answer; returning ``None`` falls through to the script."""
        with self._lock:
            self._responder = responder

    def reset(self) -> None:
        with self._lock:
            self._script = _Script()
            self._responder = None
            self._requests.clear()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script.chat)

    # -- what was received -------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def connections_opened(self) -> int:
        """The TCP connections clients opened to the server so far (a kept one counts once)."""
        with self._lock:
            return self._opened

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.kind == "chat"]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.kind == "embeddings"]

    def count_tokens(self, text: str) -> int:
        return self._tokenizer(text)

    # -- internals used by the handler -------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
            if self._record_path is not None:
                with self._record_path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(request.to_json(), ensure_ascii=False) + "\n")

    def _next_step(self, request: RecordedRequest) -> Step:
        with self._lock:
            responder = self._responder
        if responder is not None:
            step = responder(request)
            if step is not None:
                return step
        with self._lock:
            script = self._script
            if request.kind == "embeddings":
                return script.embeddings.popleft() if script.embeddings else {}
            for rule in script.rules:
                if (rule.times is None or rule.times > 0) and rule.matches(request):
                    if rule.times is not None:
                        rule.times -= 1
                    return rule.reply
            if script.chat:
                return script.chat.popleft()
            return script.default if script.default is not None else _EXHAUSTED

    def _chat_answer(self, request: RecordedRequest, step: Step) -> dict[str, Any]:
        body = request.body if isinstance(request.body, dict) else {}
        text = step.get("text")
        if step.get("echo"):
            text = "echo: " + request.last_user_text
        tool_calls = []
        for index, call in enumerate(step.get("tool_calls", ())):
            arguments = call.get("arguments", {})
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            tool_calls.append(
                {
                    "id": call.get("id", f"call_{len(self._requests)}_{index}"),
                    "type": "function",
                    "function": {"name": call["name"], "arguments": arguments},
                }
            )
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if tool_calls:
            message["tool_calls"] = tool_calls
        finish = step.get("finish_reason", "tool_calls" if tool_calls else "stop")
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{len(self._requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": step.get("model", body.get("model", "scripted")),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        usage = step.get("usage")
        if usage is None:
            prompt = reference_prompt_tokens(request.messages, request.tools, self._tokenizer)
            completion = self._tokenizer(text or "") + sum(
                self._tokenizer(c["function"]["name"]) + self._tokenizer(c["function"]["arguments"])
                for c in tool_calls
            )
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        if usage is not False:
            answer["usage"] = usage
        return answer

    def _embedding_answer(self, request: RecordedRequest, step: Step) -> dict[str, Any]:
        body = request.body if isinstance(request.body, dict) else {}
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
        with self._lock:
            dims = int(body.get("dimensions") or self._script.embedding_dimensions)
        vectors = step.get("embeddings") or [_hashed_embedding(t, dims) for t in texts]
        prompt = sum(self._tokenizer(t) for t in texts)
        return {
            "object": "list",
            "model": step.get("model", body.get("model", "scripted-embedding")),
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": prompt, "total_tokens": prompt},
        }


def _hashed_embedding(text: str, dims: int) -> list[float]:
    vector = [0.0] * dims
    for token in reference_tokens(text.lower()):
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "big") % dims
        vector[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog of 5 resets connections under a burst of concurrent calls.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], owner: Any) -> None:
        self.owner: ScriptedOpenAIServer = owner
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.owner._lock:
            self.owner._connections.add(request)
            self.owner._opened += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.owner._lock:
            self.owner._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up is an expected part of the script, not a server fault.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; without TCP_NODELAY each answer waits ~40 ms for a
    # delayed ACK, which would show up in every latency a test or benchmark measures.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(self, status: int, obj: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8"), headers)

    def do_GET(self) -> None:
        owner = self.server.owner
        if self.path.rstrip("/") == "/_control/requests":
            self._send_json(200, [r.to_json() for r in owner.requests])
        elif self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            body = None
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.startswith("/_control/"):
            self._control(path, body)
            return
        request = RecordedRequest("POST", path, dict(self.headers.items()), body, time.time())
        if request.kind == "other":
            self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        owner._record(request)
        step = owner._next_step(request)
        if step.get("delay"):
            owner._stopping.wait(float(step["delay"]))
            if owner._stopping.is_set():
                self.close_connection = True
                return
        if step.get("close"):
            self.close_connection = True
            return
        headers = dict(step.get("headers", {}))
        status = int(step.get("status", 200))
        if "raw" in step:
            self._send(status, str(step["raw"]).encode("utf-8"), headers)
        elif status >= 400:
            message = step.get("error", f"scripted status {status}")
            self._send_json(
                status, {"error": {"message": message, "type": "scripted", "code": status}}, headers
            )
        elif request.kind == "chat":
            self._send_json(status, owner._chat_answer(request, step), headers)
        else:
            self._send_json(status, owner._embedding_answer(request, step), headers)

    def _control(self, path: str, body: Any) -> None:
        owner = self.server.owner
        try:
            if path == "/_control/push":
                owner.load(body if body is not None else {})
            elif path == "/_control/reset":
                owner.reset()
            else:
                self._send_json(404, {"error": {"message": f"no control {path}"}})
                return
        except (ValueError, KeyError, TypeError) as exc:
            self._send_json(400, {"error": {"message": str(exc)}})
            return
        self._send_json(200, {"ok": True, "pending": owner.pending})


def _load_script(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible server (loopback).")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--script", type=Path, help="JSON script (format in the module docstring)")
    parser.add_argument("--record", type=Path, help="append every request here as a JSON line")
    args = parser.parse_args(list(argv) if argv is not None else None)
    script = _load_script(args.script) if args.script else None
    server = ScriptedOpenAIServer(script, host=args.host, port=args.port, record_path=args.record)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    server.start()
    print(f"listening on http://{args.host}:{server.port}/v1", flush=True)
    try:
        done.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
