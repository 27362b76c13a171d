"""Running the proxy: uvicorn on 127.0.0.1 until Ctrl-C."""
from __future__ import annotations

import socket
from collections.abc import Callable

from events import DiaristError, Home

from ..llm.openai import openai_url
from .memory import ProxyMemory

DEFAULT_PORT = 8090


def serve(home: Home, upstream: str, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
          api_key: str | None = None, on_ready: Callable[[str], None] | None = None) -> None:
    """Serve the proxy until interrupted. The port is taken first (a clear error when it is
    in use); ``on_ready`` gets the proxy's base URL once memory is open."""
    import uvicorn

    from .app import build_app

    base = openai_url(upstream)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise DiaristError(f"the proxy cannot listen on {host}:{port} ({exc.strerror})",
                           hint="Is the port in use? Choose another with --port.") from None
    url = f"http://{host}:{port}/v1"
    app = build_app(ProxyMemory(home, base, api_key), base,
                    on_ready=(lambda: on_ready(url)) if on_ready else None)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on",
                                           access_log=False))
    with sock:
        server.run(sockets=[sock])
