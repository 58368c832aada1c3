"""A real chat-completions server on 127.0.0.1 for tests (ours and yours), faults on demand.

It runs ``http.server.ThreadingHTTPServer`` on a free port in a background thread and speaks
``POST /v1/chat/completions``. Faults are queued and each request consumes the next one:
``"429"`` (with Retry-After), ``"500"``, ``"slow"`` (answers after ``slow_seconds``),
``"garbage"`` (a body that is not JSON), ``"wrongshape"`` (JSON without choices), ``"drop"``
(closes the connection without answering) and ``"echo_auth"`` (a 400 whose body repeats the
Authorization header, as a careless proxy might). Requests are counted per fingerprint of the
body and per prompt (the first user message: repair turns add more), and ``hold_after`` parks
every request after the first N answered ones until ``release()`` (used to kill a client at a
known moment).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def default_responder(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    if "response_format" in body:
        return json.dumps({"answer": last})
    return f"echo: {last}"


def first_prompt(body: dict[str, Any]) -> str:
    """The prompt of a request: its first user message (repair turns append more)."""
    users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
    return users[0] if users else ""


class FakeOpenAI:
    def __init__(self, api_key: str | None = None, latency: float = 0.0) -> None:
        self.api_key = api_key
        self.latency = latency
        self.faults: deque[str] = deque()
        self.retry_after = "0.05"
        self.slow_seconds = 0.5
        self.cost: float | None = None
        self.responder: Callable[[dict[str, Any]], str] = default_responder
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()  # requests per body fingerprint
        self.prompts: Counter[str] = Counter()  # requests per first user message
        self.answered: Counter[str] = Counter()  # 200 answers per first user message
        self.auth_headers: list[str | None] = []
        self.hold_after: int | None = None
        self.held = 0
        self._gate = threading.Event()
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> int:
        with self.lock:
            return sum(self.counts.values())

    def fail_next(self, *faults: str) -> None:
        with self.lock:
            self.faults.extend(faults)

    def release(self) -> None:
        self._gate.set()

    def close(self) -> None:
        self._gate.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # called by the handler
    def take(self, body: dict[str, Any], auth: str | None) -> tuple[str | None, bool]:
        key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with self.lock:
            self.counts[key] += 1
            self.prompts[first_prompt(body)] += 1
            self.auth_headers.append(auth)
            fault = self.faults.popleft() if self.faults else None
            hold = self.hold_after is not None and sum(self.answered.values()) >= self.hold_after
            if hold:
                self.held += 1
        return fault, hold


def _handler_for(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet tests
            pass

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            if self.path != "/v1/chat/completions":
                self._send(404, b'{"error": "not found"}')
                return
            body = json.loads(raw)
            auth = self.headers.get("Authorization")
            fault, hold = fake.take(body, auth)
            if hold:
                fake._gate.wait()
                self.close_connection = True
                return
            if fake.api_key is not None and auth != f"Bearer {fake.api_key}":
                self._send(401, b'{"error": "bad key"}')
                return
            if fault == "429":
                self._send(429, b'{"error": "slow down"}', {"Retry-After": fake.retry_after})
                return
            if fault == "500":
                self._send(500, b'{"error": "server trouble"}')
                return
            if fault == "drop":
                self.close_connection = True
                return
            if fault == "garbage":
                self._send(200, b"<html>this is not json</html>")
                return
            if fault == "wrongshape":
                self._send(200, b'{"object": "chat.completion", "choices": []}')
                return
            if fault == "echo_auth":
                self._send(400, json.dumps({"error": f"bad request from {auth}"}).encode())
                return
            if fault == "slow":
                time.sleep(fake.slow_seconds)
            if fake.latency:
                time.sleep(fake.latency)
            content = fake.responder(body)
            usage: dict[str, Any] = {"prompt_tokens": 11, "completion_tokens": 7}
            if fake.cost is not None:
                usage["cost"] = fake.cost
            payload = {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            }
            try:
                self._send(200, json.dumps(payload).encode())
            except OSError:  # the client gave up (timeout); not an answer it received
                return
            with fake.lock:
                fake.answered[first_prompt(body)] += 1

    return Handler
