"""A base_url that reaches a web server instead of an OpenAI-compatible API (a docs site, a server's root
without /v1) gets an HTML error page back; the refusal says so in one line, against a real 127.0.0.1
server that answers every request with such a page."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from a2c.cli import main
from a2c.llm import CachedGenerator, GenerationRequest, GeneratorConfig, Message
from a2c.llm.openai_backend import BackendError, OpenAIBackend
from a2c.system.cache import NoCache

HINT = "answered with a web page, not an OpenAI-compatible API: is base_url the server's /v1 address"
PAGE = b"""<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>404 - Not found</title>
  </head>
  <body>
    <h1>404 - Not found</h1>
  </body>
</html>
"""


class _Site(BaseHTTPRequestHandler):
    """Every path is a web page with `status`; `paths` records what was asked."""

    status: ClassVar[int] = 404
    body: ClassVar[bytes] = PAGE
    kind: ClassVar[str] = "text/html; charset=utf-8"
    paths: ClassVar[list[str]] = []

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).paths.append(self.path)
        self.send_response(self.status)
        self.send_header("Content-Type", self.kind)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _site(status: int, body: bytes, kind: str) -> Iterator[str]:
    handler = type("Site", (_Site,), {"status": status, "body": body, "kind": kind, "paths": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def web_site() -> Iterator[str]:
    with _site(404, PAGE, "text/html; charset=utf-8") as url:
        yield url


def _refusal(base_url: str, **options: object) -> str:
    config = GeneratorConfig(backend="openai", base_urls=[base_url], cache=None, max_retries=1,
                             retry_wait=0.05, **options)
    with pytest.raises(BackendError) as caught:
        CachedGenerator(OpenAIBackend(config), NoCache()).generate(
            [GenerationRequest(messages=(Message("user", "hi"),), max_tokens=4)])
    return str(caught.value)


@pytest.mark.parametrize("path", ["/v1", ""])
def test_a_web_page_refusal_says_to_check_base_url_in_one_line(web_site, path):
    said = _refusal(web_site + path)
    assert "\n" not in said and "refused the request (HTTP 404: <!doctype html>" in said
    assert f"the server at {web_site} {HINT}" in said
    # without /v1 the line names the address to try; with it, the server itself is the wrong one
    assert (f"({web_site}/v1)?" in said) is (path == "")


def test_the_completions_endpoint_gets_the_same_hint(web_site):
    said = _refusal(web_site, endpoint="completions")
    assert f"{web_site}/completions refused the request" in said and f"({web_site}/v1)?" in said


def test_probe_prints_the_hint_as_one_error_line(web_site, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["probe", "What happens if you swallow gum?", "--base-url", web_site, "--model", "m",
                 "--no-cache", "--judge", "exact", "--no-progress"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if "refused the request" in line]
    assert len(lines) == 1 and HINT in lines[0] and f"({web_site}/v1)?" in lines[0]


def test_an_api_refusal_in_json_gets_no_web_page_hint():
    error = {"message": "The model `m` does not exist", "type": "invalid_request_error", "param": None,
             "code": "model_not_found"}
    refusal = json.dumps({"error": error}, indent=2).encode()
    with _site(404, refusal, "application/json") as url:
        said = _refusal(url + "/v1")
        assert "does not exist" in said and "web page" not in said and "\n" not in said


def test_a_proxy_error_page_is_retried_and_gets_no_base_url_hint():
    page = b"<html>\n<head><title>502 Bad Gateway</title></head>\n<body>bad gateway</body>\n</html>\n"
    with _site(502, page, "text/html") as url:
        said = _refusal(url + "/v1")
        assert "failed after 2 attempt(s): HTTP 502: <html>" in said and "web page" not in said
        assert "\n" not in said
