"""A stand-in LLM server: OpenAI-compatible, on loopback, answering every request in milliseconds
with a reply valid for the schema the request carries.

    python scripts/standin_server.py --port 30000        # then llm.backend=openai llm.base_url=…

It lets the paper presets run at full scale on a CPU — every stream and question of the three
datasets — to prove the harness end to end (edge cases of the full data, no stall, no crash) and
to measure the harness itself (``scripts/bench_sweep.py``), with no model. Its replies are
deterministic functions of the request (words of the prompt, an enum member chosen by a hash of
it), never a model's: scores of a stand-in run mean nothing.

``GET /v1/models`` lists the served name (``--model``, owned by ``standin``); ``GET /stats``
gives requests, replies by endpoint, in-flight peak and busy seconds (wall time with at least one
request in flight). :func:`measure_capacity` hammers the server to find how many requests per
second it can answer, the denominator of "what share of the stand-in's capacity a run used".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _pick(options: list[Any], seed: str) -> Any:
    return options[int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16) % len(options)]


def schema_instance(schema: dict[str, Any], words: list[str], seed: str = "") -> Any:
    """A value valid for ``schema`` (the subset of JSON Schema the harness's calls use: objects,
    arrays, strings, numbers, booleans, enums, ``anyOf``/``oneOf``), built from ``words``."""
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return _pick(list(schema["enum"]), seed)
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return schema_instance(schema[key][0], words, seed)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {name: schema_instance(sub, words, f"{seed}/{name}")
                for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", max(low, 3)))
        count = max(low, min(high, 3))
        items = schema.get("items") or {"type": "string"}
        return [schema_instance(items, words[i:] + words[:i], f"{seed}[{i}]") for i in range(count)]
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return _pick([True, False], seed)
    if kind == "null":
        return None
    text = " ".join(words[:3]) or "memory"
    text = text[: int(schema.get("maxLength", len(text)))]
    return text.ljust(int(schema.get("minLength", 0)), "x")


def reply_for(body: dict[str, Any]) -> str:
    """The reply to one request body: the schema's instance as JSON, or a short sentence."""
    prompt = body.get("prompt") or "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    words = re.findall(r"[A-Za-z]{5,}", prompt)[-8:] or ["memory"]
    response_format = (body.get("response_format") or {}).get("json_schema") or {}
    schema = response_format.get("schema") or body.get("json_schema")
    if isinstance(schema, dict):
        return json.dumps(schema_instance(schema, words, prompt[-200:]))
    if body.get("grammar"):
        return json.dumps({"answer": words[0]})
    return "The answer is " + " ".join(words[:3]) + "."


class _Listener(ThreadingHTTPServer):
    """A listen backlog for a sweep's bursts (the standard library's 5 resets connections)."""

    request_queue_size = 512


class StandInServer:
    """The server on a free loopback port, in threads of this process (``close()`` stops it)."""

    def __init__(self, model: str = "Qwen/Qwen3-0.6B", port: int = 0) -> None:
        self.model = model
        self.requests = 0
        self.by_endpoint: dict[str, int] = {}
        self.in_flight = 0
        self.peak = 0
        self.busy_s = 0.0
        self._busy_since = 0.0
        self._lock = threading.Lock()
        self.started = time.perf_counter()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, payload: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send({"object": "list", "data": [
                        {"id": server.model, "object": "model", "created": 0, "owned_by": "standin"}]})
                elif self.path.rstrip("/").endswith("/stats"):
                    self._send(server.stats())
                else:
                    self._send({"error": "not found"}, 404)

            def do_POST(self) -> None:
                server._enter()
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                    chat = self.path.endswith("/chat/completions")
                    text = reply_for(body)
                    prompt = body.get("prompt") or "".join(str(m.get("content", ""))
                                                           for m in body.get("messages", []))
                    usage = {"prompt_tokens": max(1, len(prompt) // 4),
                             "completion_tokens": max(1, len(text) // 4)}
                    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
                    if chat:
                        choice["message"] = {"role": "assistant", "content": text}
                    else:
                        choice.update(text=text, logprobs=None)
                    with server._lock:
                        server.by_endpoint[self.path] = server.by_endpoint.get(self.path, 0) + 1
                    self._send({"id": "standin", "object": "chat.completion" if chat else "text_completion",
                                "created": 0, "model": body.get("model", server.model), "choices": [choice],
                                "usage": usage})
                finally:
                    server._leave()

        self.httpd = _Listener(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def _enter(self) -> None:
        with self._lock:
            self.requests += 1
            if self.in_flight == 0:
                self._busy_since = time.perf_counter()
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.busy_s += time.perf_counter() - self._busy_since

    def stats(self) -> dict[str, Any]:
        with self._lock:
            up = time.perf_counter() - self.started
            return {"requests": self.requests, "by_endpoint": dict(self.by_endpoint),
                    "peak_in_flight": self.peak, "busy_s": self.busy_s, "up_s": up}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def measure_capacity(url: str, model: str, seconds: float = 3.0, clients: int = 16) -> float:
    """Requests per second the stand-in answers when ``clients`` threads send as fast as they can
    (a JSON-schema chat request, as the harness sends): its capacity on this machine."""
    import urllib.request

    message = {"role": "user", "content": "Summarise the patients' notes."}
    body = json.dumps({"model": model, "messages": [message],
                       "max_tokens": 64, "response_format": {"type": "json_schema", "json_schema": {
                           "name": "r", "schema": {"type": "object", "properties": {
                               "answer": {"type": "string"}}}}}}).encode()
    done = [0] * clients
    deadline = time.perf_counter() + seconds

    def client(k: int) -> None:
        while time.perf_counter() < deadline:
            request = urllib.request.Request(f"{url}/chat/completions", data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as resp:
                resp.read()
            done[k] += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done) / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--model", default="Qwen/Qwen3-0.6B", help="the name its model list serves")
    args = parser.parse_args()
    server = StandInServer(args.model, args.port)
    print(f"stand-in serving {args.model} at {server.url} (Ctrl-C stops it)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
