"""The context-length guard: what a cut keeps, refusals that name the request, counting and caching of cut
samples on the real embedded SmolLM2, and a 24,000-token question run in a subprocess whose peak memory
is measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from a2c.llm import CachedGenerator, GenerationRequest, Message
from a2c.llm.context import ContextGuard, ContextLengthError, ContextLengthWarning
from a2c.llm.transformers_backend import TransformersBackend
from a2c.models.embedded import DEFAULT_MODEL
from a2c.system.cache import Cache

LONG = "The quick brown fox jumps over the lazy dog. " * 100 + "What colour is the fox?"


def test_a_cut_keeps_the_start_and_the_end():
    guard = ContextGuard("m", limit=10, policy="truncate", reply_in_context=True)
    request = GenerationRequest(prompt="p", max_tokens=4)  # 6 tokens left for the prompt
    assert guard.fit(list(range(6)), request) == list(range(6))
    assert guard.fit(list(range(100)), request) == [0, 1, 2, 97, 98, 99]
    encoder = ContextGuard("m", limit=10, policy="truncate", reply_in_context=False)  # the reply is not in it
    assert encoder.fit(list(range(11)), request) == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]
    assert guard.truncates_to == 10 and ContextGuard("m", 10, "refuse", True).truncates_to is None


def test_refusals_name_the_request():
    refuse = ContextGuard("tiny-model", limit=10, policy="refuse", reply_in_context=True)
    question = GenerationRequest(messages=(Message("system", "Be brief."), Message("user", LONG)),
                                 max_tokens=4)
    with pytest.raises(ContextLengthError, match=r"'The quick brown fox.*' has 20 tokens; tiny-model reads "
                                                 r"at most 6 \(10 less max_tokens=4") as info:
        refuse.fit(list(range(20)), question)
    assert info.value.hint is not None and "context_policy: truncate" in info.value.hint
    truncate = ContextGuard("tiny-model", limit=10, policy="truncate", reply_in_context=True)
    with pytest.raises(ContextLengthError, match="max_tokens=10 fills the whole context"):
        truncate.fit(list(range(20)), GenerationRequest(prompt="Q?", max_tokens=10))


@pytest.mark.slow
def test_cut_samples_are_counted_warned_and_cached_with_their_limit(smollm2, tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    small = CachedGenerator(TransformersBackend(DEFAULT_MODEL, max_model_len=256), cache)
    requests = [GenerationRequest(messages=(Message("user", LONG),), max_tokens=2),
                GenerationRequest(messages=(Message("user", "What colour is the fox?"),), max_tokens=2)]
    with pytest.warns(ContextLengthWarning, match=r"^1 of 2 samples came from a prompt longer than the "
                                                  r"context of SmolLM2-135M-Instruct \(256 tokens\), cut"):
        cut, short = small.generate(requests)
    assert cut.prompt_tokens == 254 and short.prompt_tokens < 50 and cut.text
    assert small.stats.truncated == 1 and small.stats.generated == 2
    with pytest.warns(ContextLengthWarning):
        again = small.generate(requests)
    assert again[0].cached == [True] and small.stats.truncated == 2  # cut samples served from the cache count

    # a cut sample answers only a backend that would cut the prompt the same way
    larger = CachedGenerator(TransformersBackend(DEFAULT_MODEL, max_model_len=512), cache)
    with pytest.warns(ContextLengthWarning, match=r"\(512 tokens\)"):
        wider = larger.generate(requests)
    assert wider[0].cached == [False] and wider[1].cached == [True] and wider[0].prompt_tokens == 510
    refusing = CachedGenerator(TransformersBackend(DEFAULT_MODEL, max_model_len=256, context_policy="refuse"),
                               cache)
    with pytest.raises(ContextLengthError, match=r"'The quick brown fox.*' has \d+ tokens; SmolLM2"):
        refusing.generate(requests)
    assert refusing.stats.generated == 0  # refused before anything ran, the short request included


LONG_RUN = textwrap.dedent("""
    import json, sys, warnings
    from a2c.llm import GenerationRequest, GeneratorConfig, Message, build_generator

    question = "The quick brown fox jumps over the lazy dog. " * 2400 + "What colour is the fox?"
    generator = build_generator(GeneratorConfig(cache=None))
    tokens = len(generator.impl.tokenizer(question)["input_ids"])
    out = generator.generate([GenerationRequest(messages=(Message("user", question),), max_tokens=8)])[0]
    print(json.dumps({"question_tokens": tokens, "prompt_tokens": out.prompt_tokens,
                      "truncated": generator.stats.truncated, "text": out.text}))
""")
RSS_LIMIT = 3 * 2**30  # bytes
RSS_KILL = 5 * 2**30  # a guard that fails must not take the shared box down with it
DEADLINE = 600.0  # seconds


def _watch(pid: int, done: threading.Event) -> None:
    """Kill the child once its resident memory passes RSS_KILL or it runs past DEADLINE."""
    status, deadline = Path(f"/proc/{pid}/status"), time.monotonic() + DEADLINE
    while not done.wait(0.1):
        try:
            rss_kb = next(int(line.split()[1]) for line in status.read_text().splitlines()
                          if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            return
        if rss_kb * 1024 > RSS_KILL or time.monotonic() > deadline:
            os.kill(pid, 9)
            return


def _run_measured(args: list[str]) -> tuple[int, str, str, int]:
    """Exit code, stdout, stderr and peak resident bytes of one child: `os.wait4` gives that child's own
    rusage (RUSAGE_CHILDREN would hold the largest of every child this test process ever waited for)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = threading.Event()
    threading.Thread(target=_watch, args=(proc.pid, done), daemon=True).start()
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True)
    reader.start()
    stdout = proc.stdout.read()
    reader.join()
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return proc.returncode, stdout, errors[0], usage.ru_maxrss * 1024  # Linux reports KiB


@pytest.mark.slow
def test_a_24000_token_question_runs_in_bounded_memory():
    code, stdout, stderr, peak = _run_measured([sys.executable, "-c", LONG_RUN])
    assert code == 0, stderr[-2000:]
    result = json.loads(stdout.splitlines()[-1])
    assert result["question_tokens"] > 24_000
    assert result["prompt_tokens"] == 2048 - 8 and result["truncated"] == 1 and result["text"]
    assert "ContextLengthWarning: 1 of 1 sample came from a prompt longer" in stderr
    assert peak < RSS_LIMIT, f"peak RSS {peak / 2**30:.2f} GiB"
