"""An OpenAI-compatible server in a thread that mines like a (very literal) model: for every
numbered line "[n] Speaker: … I like X …" of the last user message it answers one memory
"Speaker likes X" citing line n. Optional delay per request; every request body is kept, and
the most requests it was answering at once.
For the tests that need real HTTP and real processes (kill -9, Redis workers)."""
from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LINE = re.compile(r"^\[(\d+)\] ([^:(]+?)(?: \(context\))?: (.*)$")
LIKES = re.compile(r"\bI (?:like|love) ([\w -]+)")


def mined_answer(prompt: str) -> str:
    memories = []
    for line in prompt.splitlines():
        found = LINE.match(line)
        if not found or "(context)" in line:
            continue
        number, speaker, text = found.groups()
        for thing in LIKES.findall(text):
            memories.append({"type": "user_preference", "content": f"{speaker} likes {thing}",
                             "subject": "", "kind": "pattern", "confidence": 0.8,
                             "turns": [int(number)]})
    return json.dumps({"memories": memories})


class FakeLLM:
    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.in_flight = self.most_at_once = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _json(self, data: object) -> None:
                raw = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                try:
                    self.wfile.write(raw)
                except BrokenPipeError:  # the client was killed (the kill -9 test)
                    pass

            def do_GET(self) -> None:
                if self.path.endswith("/models"):
                    self._json({"data": [{"id": "fake-miner"}]})
                elif self.path.endswith("/props"):
                    self._json({"default_generation_settings": {"n_ctx": 2048}})
                else:
                    self.send_error(404)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.bodies.append(body)
                    fake.in_flight += 1
                    fake.most_at_once = max(fake.most_at_once, fake.in_flight)
                time.sleep(fake.delay)
                with fake.lock:
                    fake.in_flight -= 1
                last = next(m["content"] for m in reversed(body["messages"])
                            if m["role"] == "user")
                self._json({"choices": [{"index": 0, "message": {
                    "role": "assistant", "content": mined_answer(last)}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def chat_calls(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.bodies)


@contextmanager
def fake_llm(delay: float = 0.0) -> Iterator[FakeLLM]:
    fake = FakeLLM(delay)
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
