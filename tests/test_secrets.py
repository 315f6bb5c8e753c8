"""No secret printed or written: credentials in a URL are refused, server error bodies are shown with tokens
masked, and a run's `name` cannot put its folder outside `runs/`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.cli import main
from a2c.common.redact import MASK, redact
from a2c.llm import CachedGenerator, GenerationRequest, GeneratorConfig
from a2c.llm.openai_backend import BackendError, OpenAIBackend
from a2c.run.config_file import parse_config
from a2c.settings.config import ConfigError

KEY = "sk-proj-Zq81mXv0aa77KbLk3P"


@pytest.mark.parametrize(("text", "shown"), [
    ('{"error": "bad header Authorization: Bearer abc123XYZ987"}',
     '{"error": "bad header Authorization: Bearer ***"}'),
    ('{"api_key": "k-12345678", "detail": "invalid"}', '{"api_key": "***", "detail": "invalid"}'),
    ("token=ghp_0123456789abcdefghijKLMNOP&x=1", "token=***&x=1"),
    ("key hf_AbCdEfGhIjKlMnOp rejected", "key *** rejected"),
    ("see http://alice:s3cret@host:8000/v1", "see http://***@host:8000/v1"),
    # ordinary error text stays as it was
    ("HTTP 503: model is loading, retry in 5 s", "HTTP 503: model is loading, retry in 5 s"),
    ("Unexpected token sequence at line 3", "Unexpected token sequence at line 3"),
])
def test_redact_masks_credentials_and_keeps_the_rest(text, shown):
    assert redact(text) == shown


@pytest.mark.parametrize("text", [
    # a config error names the key, then says what is wrong: the words stay (they were `***`)
    "exp.yaml:2: generator.token: unknown key", "exp.yaml:3: server.api_key: expected a string",
    "password: expected at least 8 characters", "secret: missing",
    # hub ids stay whole, or the `hf download` hint cannot be followed
    "cannot load judge model 'microsoft/deberta-large-mnli' (`hf download microsoft/deberta-large-mnli`)",
    "hf download sentence-transformers/all-MiniLM-L6-v2",
    "hf download sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2",
    "hf download cross-encoder/nli-deberta-v3-base --revision 0123456789abcdef0123456789abcdef01234567",
    "Pneumonoultramicroscopicsilicovolcanoconiosis is one long word",
])
def test_redact_keeps_words_and_model_ids(text):
    assert redact(text) == text


@pytest.mark.parametrize(("text", "shown"), [
    ("X-Api-Key: abcd1234efgh", "X-Api-Key: ***"),
    ("password: Zq81mXv0aa77KbLk3PpQ", "password: ***"),
    ('{"api_key": 12345678}', '{"api_key": ***}'),
    ("my_token=abcdefgh", "my_token=***"),
    ("secret='abcdefgh'", "secret='***'"),
    ("key Zq81mXv0aa77KbLk3PpQ9rT2wX rejected", "key *** rejected"),  # random: mixed case and digits
    ("model org/sk-proj-Zq81mXv0aa77KbLk3P", "model org/***"),
])
def test_redact_still_masks_credential_like_values(text, shown):
    assert redact(text) == shown


def test_a_key_read_from_a_variable_of_any_name_is_masked(monkeypatch):
    monkeypatch.setenv("MY_LLM", "plainwordsecret")  # no format, no telling name: only being read marks it
    assert redact("echo plainwordsecret") == "echo plainwordsecret"
    OpenAIBackend(GeneratorConfig(backend="openai", base_urls=["http://127.0.0.1:9/v1"], cache=None,
                                  api_key_env="MY_LLM"))
    assert redact("echo plainwordsecret") == f"echo {MASK}"


def test_error_lines_keep_words_and_the_hub_id_of_the_hint(tmp_path):
    (tmp_path / "exp.yaml").write_text("name: x\ngenerator: {backend: openai, token: unknown}\n")
    model = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
    (tmp_path / "judges.yaml").write_text(f"judges:\n  - name: entail\n    model: {model}\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SOME_SERVICE_API_KEY": KEY}
    env.pop("A2C_DEBUG", None)
    done = [subprocess.run([sys.executable, "-m", "a2c", *argv], cwd=tmp_path, capture_output=True, text=True,
                           env=env, timeout=300, check=False)
            for argv in (["run", "exp.yaml"], ["judge", "a", "b", "--preset", "judges.yaml", "--no-cache"])]
    assert [d.returncode for d in done] == [2, 2], [d.stderr for d in done]
    assert "exp.yaml:2: generator.token: unknown key" in done[0].stderr
    assert f"(`hf download {model}`)" in done[1].stderr and MASK not in done[1].stderr


@given(st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=8, max_size=60),
       st.sampled_from(["{}", "Bearer {}", '"password": "{}"', "x-{}-y"]))
def test_a_credential_from_the_environment_is_never_shown(secret, template):
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SOME_SERVICE_API_KEY", secret)
        assert secret not in redact(f"echo: {template.format(secret)} (end)")


class _EchoAuth(BaseHTTPRequestHandler):
    """Refuses every request with a 401 whose body quotes the Authorization header it got."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        echoed = self.headers.get("Authorization")
        body = json.dumps({"error": f"invalid credentials: Authorization: {echoed}"})
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def do_GET(self) -> None:
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def echo_auth():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoAuth)
    Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_a_401_that_echoes_the_key_is_shown_masked(echo_auth, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MY_LLM", KEY)  # a variable name that says nothing: the Bearer pattern masks it
    config = GeneratorConfig(backend="openai", base_urls=[echo_auth], cache=None, api_key_env="MY_LLM")
    with pytest.raises(BackendError, match="refused the request") as info:
        CachedGenerator(OpenAIBackend(config)).generate([GenerationRequest(prompt="hi")])
    assert KEY not in str(info.value) and f"Authorization: Bearer {MASK}" in str(info.value)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert main(["probe", "hi", "--base-url", echo_auth, "--no-cache", "--judge", "exact"]) == 2
    err = capsys.readouterr().err
    assert "HTTP 401" in err and KEY not in err


def test_credentials_in_a_base_url_are_refused_and_never_written(tmp_path, capsys):
    config = tmp_path / "exp.yaml"
    config.write_text(textwrap.dedent(f"""
        name: leak
        output: {tmp_path / "run"}
        generator: {{backend: openai, base_urls: ["http://bob:{KEY}@127.0.0.1:9/v1"]}}
    """))
    assert main(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert KEY not in err and len(err.splitlines()) == 1
    assert "exp.yaml:4: generator.base_urls" in err and "http://***@127.0.0.1:9/v1" in err
    assert "api_key_env" in err and not (tmp_path / "run").exists()
    assert main(["probe", "hi", "--base-url", f"https://bob:{KEY}@api.example.com/v1"]) == 2
    err = capsys.readouterr().err
    assert KEY not in err and "credentials in a URL are refused" in err


@pytest.mark.parametrize("name", ["../../x", "/tmp/x", "a/../..", ".", "  "])
def test_a_name_cannot_leave_runs(name):
    with pytest.raises(ConfigError, match=r"<config>:1: name: .*must name a folder inside runs/"):
        parse_config(f"name: {json.dumps(name)}\n")


def test_names_and_outputs_are_normalised():
    config = parse_config("name: paper//table2/./\noutput: out/./runs//x/\n")
    assert config.name == "paper/table2" and config.output == "out/runs/x"
    assert parse_config("name: a/../b\n").run_dir.as_posix() == "runs/b"
    nli = "task: classification\nname: {}\ndataset: {{name: nli-quickstart, input: pair, labels: [a, b]}}\n"
    assert parse_config(nli.format("n/./x")).name == "n/x"
    with pytest.raises(ConfigError, match=r"name: .*must name a folder inside runs/"):
        parse_config(nli.format("../up"))
