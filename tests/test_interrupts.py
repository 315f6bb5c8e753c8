"""Ctrl-C and slow servers on the openai backend: a real `a2c` process against a real 127.0.0.1 HTTP server
(tests/fake_openai.py) that answers some requests at once and others late or never, and a real SIGINT.

What must hold: the first SIGINT drops queued requests, stops retries, waits at most `interrupt_grace` for
requests in flight and caches each that completes, then `a2c` exits 130 with one line; a second SIGINT
exits at once; a rerun asks the server only for what the cache does not hold.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2c.llm import CachedGenerator, GenerationRequest, GeneratorConfig
from a2c.llm.openai_backend import BackendError, OpenAIBackend
from tests.conftest import interruptible
from tests.fake_openai import HANG, SlowServer

pytestmark = pytest.mark.slow

@pytest.fixture
def server() -> Iterator[SlowServer]:
    s = SlowServer()
    yield s
    s.stop()


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=interruptible)


def _interrupt(proc: subprocess.Popen[str], times: int = 1, pause: float = 0.3) -> tuple[float, str]:
    """Send SIGINT `times` times; seconds from the last one to the exit, and stderr."""
    for k in range(times):
        if k:
            time.sleep(pause)
        proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return time.monotonic() - sent, stderr


def _cached(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM entries WHERE namespace = 'generation'").fetchone()[0]


def _requests(bodies: list[dict]) -> set[str]:
    """Requests as the cache tells them apart: prompt and every sampling parameter."""
    return {json.dumps(b, sort_keys=True) for b in bodies}


def test_ctrl_c_on_probe_caches_what_completes_and_exits_130(server, tmp_path):
    # the probe's first call asks for one paraphrase per technique (4): two answered at once, one 1.5 s
    # late (inside the 3 s grace), one hangs
    server.reset(delays=[0.0, 0.0, 1.5, HANG])
    probe = ["-m", "a2c", "probe", "What colour is the sky?", "--base-url", server.url, "--model", "x",
             "--judge", "exact", "--no-progress"]
    proc = _start(probe, tmp_path)
    server.wait_for(lambda: len(server.answered) == 2 and len(server.arrived) == 4)
    elapsed, stderr = _interrupt(proc)

    assert proc.returncode == 130, stderr
    *before, last = stderr.splitlines()
    assert before == ["[1/4] variation: started"] and last.startswith("a2c: interrupted")  # no traceback
    # the hung request is not waited for beyond the 3 s grace (measured: 4 s to exit, 1 s of it Python's
    # own teardown, on 2 busy cores); before, queued requests and retries held the exit for 61-80 s
    assert elapsed < 12.0
    assert len(server.answered) == 3
    cache = tmp_path / ".a2c-cache" / "cache.sqlite"
    assert _cached(cache) == 3  # the answer that arrived after Ctrl-C is cached too

    # a rerun asks again only for the request that never got its answer
    done = _requests(server.answered)
    hung = _requests(server.arrived) - done
    server.reset()
    rerun = _start(probe, tmp_path)
    stdout, stderr = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, stderr
    asked = _requests(server.arrived)
    assert len(hung) == 1 and hung <= asked and not done & asked
    assert "A2C answer:" in stdout


def test_sigterm_is_a_first_ctrl_c_and_exits_143(server, tmp_path):
    # as in the Ctrl-C test: two answered at once, one 1.5 s late (inside the 3 s grace), one hangs
    server.reset(delays=[0.0, 0.0, 1.5, HANG])
    proc = _start(["-m", "a2c", "probe", "What colour is the sky?", "--base-url", server.url, "--model", "x",
                   "--judge", "exact", "--no-progress"], tmp_path)
    server.wait_for(lambda: len(server.answered) == 2 and len(server.arrived) == 4)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stderr
    # probe's stage lines, then one line for the signal, no traceback
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines == ["[1/4] variation: started", "a2c: terminated (SIGTERM)"], stderr
    assert len(server.answered) == 3 and _cached(tmp_path / ".a2c-cache" / "cache.sqlite") == 3


def test_sigterm_anywhere_else_ends_in_one_line_and_the_handler_is_put_back(monkeypatch, capsys):
    from a2c.cli import main

    def terminated_now(*args: object, **kwargs: object) -> float:
        os.kill(os.getpid(), signal.SIGTERM)  # delivered to this (main) thread: raises at once
        raise AssertionError("SIGTERM did not stop the command")

    monkeypatch.setattr("a2c.metrics.contrast.relative_consistency", terminated_now)
    assert main(["metrics", "rc", "--bundles", "10", "--correct", "10", "--consistent", "2"]) == 143
    assert capsys.readouterr().err == "a2c: terminated (SIGTERM)\n"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


SCRIPT = textwrap.dedent("""
    import sys
    from a2c.llm import GenerationRequest, GeneratorConfig, Message, build_generator

    url, cache, grace, n = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    generator = build_generator(GeneratorConfig(backend="openai", base_urls=(url,), model="x", cache=cache,
                                                interrupt_grace=grace, max_concurrency=2, retry_wait=0.2))
    requests = [GenerationRequest(messages=(Message("user", f"Question {i}?"),)) for i in range(n)]
    try:
        generator.generate(requests)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
""")


def _generate(server: SlowServer, tmp_path: Path, grace: float, n: int) -> subprocess.Popen[str]:
    return _start(["-c", SCRIPT, server.url, str(tmp_path / "c.sqlite"), str(grace), str(n)], tmp_path)


def test_queued_requests_are_dropped_and_a_rerun_resumes(server, tmp_path):
    server.reset(delays=[0.0, 0.0, 0.0, HANG, 1.5])  # with 2 workers: the 5th runs next to the hung 4th
    proc = _generate(server, tmp_path, grace=5.0, n=12)
    server.wait_for(lambda: len(server.arrived) == 5)
    elapsed, stderr = _interrupt(proc)
    assert proc.returncode == 130 and stderr.strip() == "interrupted"
    assert 4.0 < elapsed < 10.0  # the 5 s grace ran out on the hung request
    assert len(server.arrived) == 5  # the 7 queued requests were never sent
    assert _cached(tmp_path / "c.sqlite") == 4

    server.reset()
    rerun = _generate(server, tmp_path, grace=5.0, n=12)
    assert rerun.wait(timeout=60) == 0
    assert len(server.arrived) == 8 and _cached(tmp_path / "c.sqlite") == 12


def test_second_ctrl_c_exits_at_once(server, tmp_path):
    server.reset(delays=[HANG, HANG])
    proc = _generate(server, tmp_path, grace=60.0, n=4)
    server.wait_for(lambda: len(server.arrived) == 2)
    elapsed, stderr = _interrupt(proc, times=2)
    assert proc.returncode == 130 and stderr.strip() == "interrupted"
    assert elapsed < 5.0  # not the 60 s grace


def test_ctrl_c_stops_retries(server, tmp_path):
    server.reset(status=503)  # every attempt fails; the backoff waits grow from 0.2 s
    proc = _generate(server, tmp_path, grace=5.0, n=2)
    server.wait_for(lambda: len(server.arrived) >= 6)  # both requests are retrying
    elapsed, _ = _interrupt(proc)
    seen = len(server.arrived)
    time.sleep(1.0)
    assert proc.returncode == 130 and elapsed < 4.0  # no request in flight: no 5 s grace to wait out
    assert len(server.arrived) == seen


def test_timeout_and_retries_are_honoured(server):
    server.reset(delays=[HANG] * 3)
    config = GeneratorConfig(backend="openai", base_urls=(server.url,), cache=None, timeout=0.5,
                             max_retries=1, retry_wait=0.2)
    generator = CachedGenerator(OpenAIBackend(config))
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"failed after 2 attempt\(s\): ReadTimeout"):
        generator.generate([GenerationRequest(prompt="hi")])
    assert 1.2 <= time.monotonic() - started < 3.0  # two 0.5 s attempts and one 0.2 s wait
    assert len(server.arrived) == 2


def _run_config(tmp_path: Path, server: SlowServer) -> Path:
    config = tmp_path / "slow.yaml"
    config.write_text(textwrap.dedent(f"""
        name: slow
        limit: 1
        output: {tmp_path / "run"}
        generator: {{backend: openai, model: x, base_urls: ["{server.url}"], interrupt_grace: 0.5}}
        judges: [exact]
        accuracy: {{similarities: [rouge1]}}
    """))
    return config


def test_a_second_run_on_a_live_run_folder_refuses_and_force_deletes_nothing(server, tmp_path):
    server.reset(delays=[HANG] * 8)  # the first run holds the folder while its paraphrase requests hang
    config = _run_config(tmp_path, server)
    first = _start(["-m", "a2c", "run", str(config), "--no-progress"], tmp_path)
    server.wait_for(lambda: len(server.arrived) >= 1)
    written = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert "run.json" in written and "config.yaml" in written
    try:
        for extra in ([], ["--force"]):
            second = subprocess.run([sys.executable, "-m", "a2c", "run", str(config), *extra], cwd=tmp_path,
                                    capture_output=True, text=True, timeout=120)
            assert second.returncode == 2, second.stderr
            assert f"is in use by another a2c run (pid {first.pid})" in second.stderr
            assert "Traceback" not in second.stderr
            assert sorted(p.name for p in (tmp_path / "run").iterdir()) == written  # --force removed nothing
        assert len(server.arrived) <= 8  # the refused runs asked the server nothing
    finally:
        _interrupt(first)
    assert first.returncode == 130
    # the lock went with its holder: the folder is usable again at once
    server.reset()
    again = subprocess.run([sys.executable, "-m", "a2c", "run", str(config), "--no-progress"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr


def test_a_rerun_after_ctrl_c_says_the_interrupted_stage_resumes(server, tmp_path):
    """The stage Ctrl-C stopped is named as interrupted, not as "not run before"; a stage that never
    started still is."""
    server.reset(delays=[0.0, HANG, HANG, HANG])  # the variation stage's first request answers, the rest hang
    config = _run_config(tmp_path, server)
    first = _start(["-m", "a2c", "run", str(config), "--no-progress"], tmp_path)
    server.wait_for(lambda: len(server.arrived) >= 2)
    _interrupt(first)
    assert first.returncode == 130
    assert (tmp_path / "run" / "stages" / "variation.started.json").is_file()
    server.reset()
    again = subprocess.run([sys.executable, "-m", "a2c", "run", str(config), "--no-progress"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    assert lines[0] == ("variation: runs (interrupted or failed before it finished last time; "
                        "resumed: the request cache serves the model calls it made)"), lines[:3]
    assert "answers: runs (not run before)" in lines
    assert not list((tmp_path / "run" / "stages").glob("*.started.json"))  # each removed as its stage ended
