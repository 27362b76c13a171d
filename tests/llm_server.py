"""A fake model server for tests: a real HTTP server on 127.0.0.1 in a thread, speaking
whatever wire format a test's routes write (Ollama's NDJSON, OpenAI's SSE, garbage), so the
real backend code — urllib, the parsers, the streaming loop — is what runs."""
from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Route = Callable[["Handler", dict], None]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # streams use chunked transfer encoding, like the real servers
    routes: dict[tuple[str, str], Route] = {}
    seen: list[dict] = []

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else {}
        self.seen.append({"method": method, "path": self.path, "headers": dict(self.headers),
                          "body": body})
        route = self.routes.get((method, self.path))
        if route is None:
            self.send_json(404, {"error": "404 page not found"})
            return
        try:
            route(self, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up (interrupt test)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def send_json(self, status: int, data: object) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def send_stream(self, content_type: str, chunks: list[bytes], delay: float = 0.01) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for c in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(c), c))
            self.wfile.flush()
            time.sleep(delay)
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True



@contextlib.contextmanager
def serve() -> Iterator[tuple[str, type[Handler]]]:
    """A running server with its own routes: (base URL, handler class)."""
    handler = type("H", (Handler,), {"routes": {}, "seen": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()
