"""A fake OpenAI-compatible server on loopback (tests only): records request bodies, answers
with fixed texts or a scripted reply, and fails chosen requests with HTTP 500."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer:
    """``fail_first``: the first n requests get 500; ``fail_every``: every n-th request does;
    ``fail_from``: every request after the n-th does (deterministic, whatever the retries);
    ``fail_status`` is the failures' HTTP status. ``reply(body) -> text`` scripts the content.
    ``models``: what ``GET /models`` lists (None: the server has no such list, a 404), each
    ``owned_by`` the ``engine``. ``serve_s``: seconds each reply takes (``serial``: one at a time,
    the others queued as on a busy server); ``peak`` is the most requests ever in flight."""

    def __init__(self, fail_first: int = 0, fail_every: int = 0,
                 reply: Callable[[dict], str] | None = None, fail_from: int = 0, fail_status: int = 500,
                 models: list[str] | None = None, engine: str = "loopback", serve_s: float = 0.0,
                 serial: bool = False) -> None:
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.fail_first = fail_first
        self.fail_every = fail_every
        self.reply = reply
        self.failed = 0
        self.fail_from = fail_from
        self.fail_status = fail_status
        self.models = models
        self.engine = engine
        self.serve_s = serve_s
        self.in_flight = 0
        self.peak = 0
        self._serial = threading.Lock() if serial else None
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if server.models is None or not self.path.endswith("/models"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = json.dumps({"object": "list", "data": [
                    {"id": name, "object": "model", "created": 0, "owned_by": server.engine}
                    for name in server.models]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                with server._lock:
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                try:
                    if server._serial is not None:
                        with server._serial:
                            self._answer()
                    else:
                        self._answer()
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self):
                if server.serve_s:
                    time.sleep(server.serve_s)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.paths.append(self.path)
                    server.bodies.append(body)
                    n = len(server.bodies)
                    fail = (n <= server.fail_first or (server.fail_every and n % server.fail_every == 0)
                            or (server.fail_from and n > server.fail_from))
                    server.failed += bool(fail)
                if fail:
                    self.send_response(server.fail_status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
                chat = self.path.endswith("/chat/completions")
                text = server.reply(body) if server.reply else ('{"answer": "chat"}' if chat else '{"answer": "raw"}')
                if chat:
                    payload = {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": text}}],
                               "usage": usage}
                else:
                    payload = {"id": "c", "object": "text_completion", "created": 0, "model": body["model"],
                               "choices": [{"index": 0, "text": text,
                                            "finish_reason": "stop" if server.reply else "length",
                                            "logprobs": None}], "usage": usage}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def request_of(body: dict):
    """The :class:`~clag.llm.types.Request` a request body came from (for scripted replies)."""
    from clag.llm.types import Request

    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
    if "messages" in body:
        return Request(messages=tuple((m["role"], m["content"]) for m in body["messages"]), json_schema=schema,
                       temperature=body.get("temperature", 0.0), max_tokens=body.get("max_tokens", 1000))
    return Request(prompt=body["prompt"], json_schema=schema, temperature=body.get("temperature", 0.0),
                   max_tokens=body.get("max_tokens", 1000))
