"""Feedback while a2c works: a bar per generate call that moves per finished batch, one line per stage
as `a2c probe` starts and ends it, and no other library's bars unless `--debug`."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import ClassVar

import pytest
import tqdm

from a2c.cli import main
from a2c.llm import GenerationRequest, GeneratorConfig, Message, build_generator
from a2c.llm.progress import QUIET_ENV, generation_progress

SCRIPTED = ["--backend", "scripted", "--model", "scripted:1|2|Paris|Rome\nMadrid|Which one?", "--judge",
            "exact", "--no-cache"]
# probe runs the run's stages, the judge's too: one line as each starts and one as it ends
STAGE_LINES = ["[1/4] variation: started", "[1/4] variation: done in", "[2/4] answers: started",
               "[2/4] answers: done in", "[3/4] a2c: started", "[3/4] a2c: done in",
               "[4/4] judges_before: started", "[4/4] judges_before: done in"]


class Recorder(tqdm.tqdm):
    """tqdm that keeps every bar it makes and the steps each moved by."""

    made: ClassVar[list[Recorder]] = []

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.shown = not self.disable  # `close` sets `disable`
        self.steps: list[int] = []
        Recorder.made.append(self)

    def update(self, n: float | None = 1) -> bool | None:
        self.steps.append(int(n or 0))
        return super().update(n)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfixes = [*getattr(self, "postfixes", []), s]
        super().set_postfix_str(s, refresh)


def _env() -> dict[str, str]:
    """The environment without what `a2c.cli.main` sets when an earlier test called it in this process."""
    return {k: v for k, v in os.environ.items() if k not in QUIET_ENV}


@pytest.fixture
def restored_env(monkeypatch):
    """`main` called in-process sets QUIET_ENV; setenv then delenv makes monkeypatch restore it afterwards."""
    for name in QUIET_ENV:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


@pytest.fixture
def recorder(monkeypatch):
    Recorder.made = []
    monkeypatch.setattr(tqdm, "tqdm", Recorder)  # `generation_bar` imports tqdm.tqdm when it makes a bar
    return Recorder


@pytest.mark.slow
def test_the_bar_moves_per_batch_and_counts_cached_prompts_as_done(recorder, tmp_path):
    generator = build_generator(GeneratorConfig(backend="transformers", batch_size=2,
                                                cache=str(tmp_path / "cache.sqlite")))
    requests = [GenerationRequest(messages=(Message("user", f"Count to {i}."),), max_tokens=2)
                for i in range(3)]
    with generation_progress("answers: generate"):
        generator.generate(requests)
    bar = recorder.made[-1]
    assert (bar.desc, bar.total, bar.n, bar.shown) == ("answers: generate", 3, 3, True)
    assert bar.steps == [2, 1]  # the backend's two batches of batch_size 2, not one jump at the end
    with generation_progress("answers: generate"):
        generator.generate([*requests, GenerationRequest(prompt="One more", max_tokens=2)])
    bar = recorder.made[-1]
    assert (bar.total, bar.steps, bar.n) == (4, [1], 4)  # three served by the cache: done from the start
    generator.generate(requests)
    assert not recorder.made[-1].shown  # outside generation_progress (library use): no bar
    with generation_progress("answers: generate", enabled=False):
        generator.generate(requests)
    assert not recorder.made[-1].shown


@pytest.mark.slow
def test_the_bar_moves_every_decoding_step_inside_a_batch(recorder):
    """One batch of 3 prompts runs as one whole: the bar's count moves once, at its end, but the bar is
    redrawn every decoding step (a batch of 32 took minutes on 2 cores with a still bar)."""
    generator = build_generator(GeneratorConfig(backend="transformers", batch_size=8, cache=None))
    requests = [GenerationRequest(messages=(Message("user", f"Count to {i}."),), max_tokens=5,
                                  temperature=1.0, seed=i) for i in range(3)]
    with generation_progress("answers: generate"):
        generator.generate(requests)
    bar = recorder.made[-1]
    assert bar.steps == [3]
    assert bar.postfixes[:2] == ["batch token 1/5", "batch token 2/5"] and len(bar.postfixes) <= 5
    generator.generate(requests[:1])
    assert not getattr(recorder.made[-1], "postfixes", [])  # outside generation_progress: nothing drawn


def test_probe_prints_a_line_as_each_stage_starts_and_ends(capsys, restored_env):
    assert main(["probe", "Where is the Eiffel Tower?", *SCRIPTED, "--no-progress"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert [next(i for i, line in enumerate(lines) if line.startswith(part)) for part in STAGE_LINES] \
        == list(range(len(STAGE_LINES)))  # each once, in order, nothing between: no bars
    assert "variation" not in captured.out  # stdout holds the results alone
    assert "A2C answer:" in captured.out


def _probe(*args: str, cwd) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "a2c", "probe", "Where is the Eiffel Tower?", *args]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=1200, env=_env())
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_no_progress_silences_the_generation_bars(tmp_path):
    shown = _probe(*SCRIPTED, cwd=tmp_path).stderr
    assert "variation: generate" in shown and "prompt/s" in shown  # a bar per generate call
    silent = _probe(*SCRIPTED, "--no-progress", cwd=tmp_path).stderr
    assert ": generate" not in silent and "%|" not in silent
    assert all(part in silent for part in STAGE_LINES)


@pytest.mark.slow
def test_a_transformers_probe_under_no_progress_prints_no_bar(tmp_path):
    """Loading the embedded GGUF shows transformers' "Converting and de-quantizing" and "Loading weights"
    bars unless silenced."""
    err = _probe("--backend", "transformers", "--judge", "exact", "--temperatures", "0.5", "--no-cache",
                 "--no-progress", cwd=tmp_path).stderr
    assert "%|" not in err and "it/s" not in err and "de-quantizing" not in err, err[-2000:]
    assert all(part in err for part in STAGE_LINES)


QUIET_THEN_BAR = ("from a2c.llm.progress import quiet_library_progress\n"
                  "{quiet}\n"
                  "from tqdm.auto import tqdm\n"
                  "from transformers.utils import logging\n"
                  "list(tqdm(range(3), desc='plain bar'))\n"
                  "list(logging.tqdm(range(3), desc='transformers bar'))\n"
                  "list(tqdm(range(3), desc='own bar', disable=False))\n")


@pytest.mark.parametrize("quiet", [True, False])
def test_other_libraries_bars_are_silenced_but_not_a2cs_own(quiet, tmp_path):
    script = QUIET_THEN_BAR.format(quiet="quiet_library_progress()" if quiet else "")
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600, env=_env())
    assert result.returncode == 0, result.stderr
    assert ("plain bar" in result.stderr) is not quiet and ("transformers bar" in result.stderr) is not quiet
    assert "own bar" in result.stderr  # a bar that says `disable` itself (a2c's) keeps its say


def test_run_shows_a_bar_per_generate_call_unless_no_progress(tmp_path):
    (tmp_path / "tiny.yaml").write_text(
        "name: tiny\nlimit: 1\njudges: [exact]\naccuracy: {similarities: [rouge1]}\n"
        "generator: {backend: scripted, model: 'scripted:1|2|Which one?', cache: null}\n")

    def run(*flags: str) -> str:
        command = [sys.executable, "-m", "a2c", "run", "tiny.yaml", "--output", f"run{len(flags)}", *flags]
        result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1200,
                                env=_env())
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stderr

    shown, silent = run(), run("--no-progress")
    assert "generate:" in shown and "prompt/s" in shown, shown[-2000:]
    assert "generate" not in silent and "%|" not in silent, silent[-2000:]
