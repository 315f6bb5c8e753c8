"""`a2c probe` on the embedded model and on a real served model, and its one-line error for a server
that is not there."""

from __future__ import annotations

import subprocess
import sys

import pytest

from a2c.llm.embedded import DEFAULT_MODEL
from tests.conftest import free_port

PROBE_PARTS = ("paraphrases and answers:", "embedding agreement matrix (paraphrases)",
               "embedding agreement matrix (temperatures)", "Cons_sem =", "entropy =", "Ask-to-Choose:",
               "A2C answer:")


def _rank_replies(out: str) -> int:
    section = out.split("Ask-to-Choose:")[1]
    return sum(line.strip().startswith(("c", "t")) and "reply" in line for line in section.splitlines())


def test_probe_reports_an_unreachable_server_in_one_line(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"  # bound then released: nothing listens there
    command = [sys.executable, "-m", "a2c", "probe", "Why is the sky blue?", "--base-url", url,
               "--model", "m"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert f"cannot reach the server at {url}" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_probe_on_the_embedded_model_prints_every_part(tmp_path):
    command = [sys.executable, "-m", "a2c", "probe", "How many legs does a spider have?",
               "--backend", "transformers", "--temperatures", "0.5", "1.0"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    for part in PROBE_PARTS:
        assert part in out, part
    # one rank reply per paraphrase context (4) and per temperature (2)
    assert _rank_replies(out) == 6


@pytest.mark.slow
def test_probe_against_a_served_model(llama_server, tmp_path):
    """The same probe through the OpenAI-compatible API of a real llama.cpp server on 127.0.0.1."""
    command = [sys.executable, "-m", "a2c", "probe", "What colour is a ripe banana?",
               "--base-url", llama_server.base_url, "--model", DEFAULT_MODEL, "--temperatures", "0.5", "1.0",
               "--no-cache"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    for part in PROBE_PARTS:
        assert part in result.stdout, part
    assert _rank_replies(result.stdout) == 6
    assert not (tmp_path / ".a2c-cache").exists()  # --no-cache: nothing written
