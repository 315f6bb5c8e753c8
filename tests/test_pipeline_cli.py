"""`a2c probe` on the embedded model, and its one-line error for a server that is not there."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_probe_reports_an_unreachable_server_in_one_line(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/v1"  # bound then released: nothing listens there
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
    for part in ("paraphrases and answers:", "embedding agreement matrix (paraphrases)",
                 "embedding agreement matrix (temperatures)", "Cons_sem =", "entropy =", "Ask-to-Choose:",
                 "A2C answer:"):
        assert part in out, part
    # one rank reply per paraphrase context (4) and per temperature (2)
    section = out.split("Ask-to-Choose:")[1]
    assert sum(line.strip().startswith(("c", "t")) and "reply" in line for line in section.splitlines()) == 6
