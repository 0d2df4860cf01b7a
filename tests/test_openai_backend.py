"""The openai backend against a fake OpenAI-compatible server on loopback."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from clag.llm.openai_backend import LLMServerError, OpenAIBackend
from clag.llm.types import Request


class FakeServer:
    def __init__(self, fail_first: int = 0):
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.fail_first = fail_first
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.paths.append(self.path)
                server.bodies.append(body)
                if len(server.bodies) <= server.fail_first:
                    self.send_response(500)
                    self.end_headers()
                    return
                usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
                if self.path.endswith("/chat/completions"):
                    payload = {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": '{"answer": "chat"}'}}],
                               "usage": usage}
                else:
                    payload = {"id": "c", "object": "text_completion", "created": 0, "model": body["model"],
                               "choices": [{"index": 0, "text": '{"answer": "raw"}', "finish_reason": "length",
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

    def close(self):
        self.httpd.shutdown()


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def test_chat_endpoint_sends_the_schema_and_reads_usage(server):
    backend = OpenAIBackend(server.url, "m", endpoint="chat")
    out = backend.generate([Request(prompt="hi", json_schema=SCHEMA, temperature=0.5, seed=3, tag="answer")])[0]
    assert out.text == '{"answer": "chat"}' and out.prompt_tokens == 7 and out.completion_tokens == 3
    body = server.bodies[0]
    assert server.paths[0] == "/v1/chat/completions"
    assert body["messages"] == [{"role": "user", "content": "hi"}] and body["seed"] == 3
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA


def test_completions_endpoint_sends_the_raw_prompt_and_reports_truncation(server):
    backend = OpenAIBackend(server.url, "m", endpoint="completions", concurrency=4)
    outs = backend.generate([Request(prompt=f"p{i}", temperature=0) for i in range(6)])
    assert [o.text for o in outs] == ['{"answer": "raw"}'] * 6 and outs[0].finish_reason == "length"
    assert sorted(b["prompt"] for b in server.bodies) == [f"p{i}" for i in range(6)]


def test_server_errors_are_retried():
    server = FakeServer(fail_first=2)
    try:
        backend = OpenAIBackend(server.url, "m", retries=3)
        assert backend.generate([Request(prompt="hi", temperature=0)])[0].text == '{"answer": "chat"}'
        assert len(server.bodies) == 3
    finally:
        server.close()


def test_an_unreachable_server_fails_with_its_url_after_bounded_retries():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    backend = OpenAIBackend(url, "m", retries=2, timeout_s=2)
    with pytest.raises(LLMServerError, match=f"LLM server at {url} failed after 2 attempts"):
        backend.generate([Request(prompt="hi", temperature=0)])


def test_completions_endpoint_sends_the_schema_in_the_body(server):
    backend = OpenAIBackend(server.url, "m", endpoint="completions", repetition_penalty=1.1)
    backend.generate([Request(prompt="p", json_schema=SCHEMA, temperature=0)])
    body = server.bodies[0]
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA and body["repetition_penalty"] == 1.1
