"""Feedback while a2c works: a bar per generate call that moves per finished batch, one line per stage
as `a2c probe` starts and ends it, and no other library's bars unless `--debug`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import ClassVar

import pytest
import tqdm

import a2c.llm.scripted
from a2c.cli import main
from a2c.llm import Completion, GenerationRequest, GeneratorConfig, Message, build_generator
from a2c.llm.sampling import CachedGenerator, Emit, SampleResult
from a2c.system import progress
from a2c.system.progress import QUIET_ENV, decoding_step, generation_progress, reading_prompts, status
from tests.terminal import on_a_terminal, screen

SCRIPTED = ["--backend", "scripted", "--model", "scripted:1|2|Paris|Rome\nMadrid|Which one?", "--judge",
            "exact", "--no-cache"]
# probe runs the run's stages, the judge's too: one line as each starts and one as it ends
STAGE_LINES = ["[1/4] variation: started", "[1/4] variation: done in", "[2/4] answers: started",
               "[2/4] answers: done in", "[3/4] ask_to_choose: started", "[3/4] ask_to_choose: done in",
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
        moved = super().update(n)
        self.drawn = [*getattr(self, "drawn", []), str(self)]  # the bar as it reads after each move
        return moved

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
    monkeypatch.setattr(tqdm, "tqdm", Recorder)  # `progress.bar` imports tqdm.tqdm when it makes a bar
    return Recorder


class Stepping:
    """A backend that runs its jobs as one batch, reporting the forward pass over the prompts (`reading`
    seconds) and each decoding step (`step` seconds each), as the transformers backend does."""

    backend, model, truncates_to, keep_going, sampler = "stepping", "fake", None, False, None

    def __init__(self, reading: float = 0.0, step: float = 0.0) -> None:
        self.reading, self.step = reading, step

    def served_model(self) -> None:
        return None

    def draw_identity(self) -> None:
        return None

    def run(self, jobs: Sequence[GenerationRequest], emit: Emit) -> None:
        reading_prompts(len(jobs), 10 * len(jobs))
        time.sleep(self.reading)
        steps = max(job.max_tokens for job in jobs)
        for step in range(1, steps + 1):
            time.sleep(self.step)
            decoding_step(len(jobs), step, steps)
        emit([(j, SampleResult(Completion("x", "stop", 1))) for j in range(len(jobs))])


def _asked(prompts: int, max_tokens: int) -> list[GenerationRequest]:
    return [GenerationRequest(prompt=f"Question {i}?", max_tokens=max_tokens) for i in range(prompts)]


@pytest.fixture
def terminal(monkeypatch):
    """Bars drawn as on a terminal (captured stderr is none), with a fast clock."""
    monkeypatch.setattr(progress, "on_terminal", lambda: True)
    monkeypatch.setattr(progress, "TICK_SECONDS", 0.05)
    monkeypatch.setattr(progress, "STATUS_AFTER_SECONDS", 0.1)


def test_a_generate_call_over_one_batch_moves_every_step_with_an_eta(recorder):
    generator = CachedGenerator(Stepping(step=0.02))
    with generation_progress("answers: generate"):
        generator.generate(_asked(4, max_tokens=10))
    bar = recorder.made[-1]
    # drawn as the prompts are read, moved by each step, the budget left at the end is none
    assert bar.steps == [0, *[4] * 10, 0] and (bar.n, bar.total) == (40, 40)
    assert "<?" in bar.drawn[0] and "<?" not in bar.drawn[5], bar.drawn  # an ETA from the first steps on
    assert bar.postfixes[-1] == "4/4 prompts"


def test_a_long_forward_pass_still_redraws_the_bar_on_a_terminal(capsys, terminal):
    """No step for half a second (one forward pass over long prompts): the clock is redrawn meanwhile."""
    with generation_progress("answers: generate"):
        CachedGenerator(Stepping(reading=0.5)).generate(_asked(2, max_tokens=3))
    assert capsys.readouterr().err.count("reading 2 prompts (20 tokens)") >= 4


def test_in_a_log_the_bar_is_not_redrawn_every_step(capsys):
    with generation_progress("answers: generate"):
        CachedGenerator(Stepping()).generate(_asked(2, max_tokens=40))
    err = capsys.readouterr().err
    assert "answers: generate" in err and err.count("\r") <= 4, err  # drawn, closed; not 40 redraws


class SlowLoad(a2c.llm.scripted.ScriptedBackend):
    def __init__(self, model: str) -> None:
        time.sleep(0.6)
        super().__init__(model)


def test_a_loading_status_updates_while_a_slow_load_sleeps(capsys, terminal, monkeypatch):
    monkeypatch.setattr(a2c.llm.scripted, "ScriptedBackend", SlowLoad)
    with generation_progress("variation: generate"):
        build_generator(GeneratorConfig(backend="scripted", model="scripted:slow|load", cache=None))
    assert capsys.readouterr().err.count("loading scripted:slow|load … 00:00") >= 3
    build_generator(GeneratorConfig(backend="scripted", model="scripted:slow|library", cache=None))
    with generation_progress("variation: generate", enabled=False):  # --no-progress
        build_generator(GeneratorConfig(backend="scripted", model="scripted:slow|quiet", cache=None))
    assert capsys.readouterr().err == ""


def test_a_status_line_is_left_out_of_a_log_and_of_quick_work(capsys, terminal, monkeypatch):
    with generation_progress("report"):
        with status("quick"):
            pass
        monkeypatch.setattr(progress, "on_terminal", lambda: False)
        with status("in a log"):
            time.sleep(0.3)
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_the_bar_moves_per_batch_and_counts_cached_prompts_as_done(recorder, tmp_path):
    generator = build_generator(GeneratorConfig(backend="transformers", batch_size=2,
                                                cache=str(tmp_path / "cache.sqlite")))
    requests = [GenerationRequest(messages=(Message("user", f"Count to {i}."),), max_tokens=2)
                for i in range(3)]
    with generation_progress("answers: generate"):
        generator.generate(requests)
    bar = recorder.made[-1]
    # the bar counts token budgets (3 prompts of max_tokens 2); the prompts done are in its postfix
    assert (bar.desc, bar.total, bar.n, bar.shown) == ("answers: generate", 6, 6, True)
    assert bar.postfixes[-1] == "3/3 prompts"
    assert "2/3 prompts" in bar.postfixes  # the first batch of batch_size 2, not one jump at the end
    with generation_progress("answers: generate"):
        generator.generate([*requests, GenerationRequest(prompt="One more", max_tokens=2)])
    bar = recorder.made[-1]
    assert (bar.total, bar.n) == (8, 8) and sum(bar.steps) == 2  # three served by the cache: done at once
    generator.generate(requests)
    assert not recorder.made[-1].shown  # outside generation_progress (library use): no bar
    with generation_progress("answers: generate", enabled=False):
        generator.generate(requests)
    assert not recorder.made[-1].shown


@pytest.mark.slow
def test_the_bar_moves_every_decoding_step_inside_a_batch(recorder):
    """One batch of 3 prompts runs as one whole: the bar says it reads the prompts, then moves one token of
    every row per decoding step (a batch of 32 took minutes on 2 cores with a still bar)."""
    generator = build_generator(GeneratorConfig(backend="transformers", batch_size=8, cache=None))
    requests = [GenerationRequest(messages=(Message("user", f"Count to {i}."),), max_tokens=5,
                                  temperature=1.0, seed=i) for i in range(3)]
    with generation_progress("answers: generate"):
        generator.generate(requests)
    bar = recorder.made[-1]
    assert bar.steps[:3] == [0, 3, 3] and (bar.n, bar.total) == (15, 15)  # read, then a token of each row
    said = [p.partition(", ")[2] for p in bar.postfixes]  # after "0/3 prompts, "
    assert said[0].startswith("reading 3 prompts (") and said[1:3] == ["token 1/5", "token 2/5"], said
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
    assert "variation: generate" in shown and "prompts]" in shown  # a bar per generate call
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


QUIET_THEN_BAR = ("from a2c.system.progress import quiet_library_progress\n"
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
    assert "generate:" in shown and "prompts]" in shown, shown[-2000:]
    assert "generate" not in silent and "%|" not in silent, silent[-2000:]


def test_the_wrapper_with_progress_moves_a_bar_every_decoding_step(recorder, capsys):
    """`AskToChoose.answer(progress=True)`, the library path: a bar per generate call of each stage, moved
    by every decoding step of the batch; without `progress` nothing is drawn."""
    from a2c.choose import AskToChoose

    wrapper = AskToChoose(CachedGenerator(Stepping()), temperatures=[0.5])
    wrapper.answer("Where is the Eiffel Tower?", progress=True)
    shown = [bar for bar in recorder.made if bar.shown]
    assert {bar.desc for bar in shown} == {"variation: generate", "answers: generate",
                                           "ask_to_choose: generate"}
    assert all(sum(1 for step in bar.steps if step) > 1 for bar in shown)  # moved within its one batch
    assert "[3/3] ask_to_choose: done in" in capsys.readouterr().err
    recorder.made.clear()
    wrapper.answer("Where is the Eiffel Tower?")
    assert not any(bar.shown for bar in recorder.made) and capsys.readouterr().err == ""


def test_vllm_finished_requests_move_the_generate_bar(recorder):
    """vLLM's `LLM.generate` drives the `use_tqdm` it is given as its own bar (update per finished request,
    postfix, format_dict); `engine_requests` passes that on to the generate call's bar."""
    from a2c.system.progress import engine_requests

    class Engine:  # runs its batch as vLLM's offline loop does: one finished request at a time
        backend, model, truncates_to, keep_going, sampler = "engine", "fake", None, False, None

        def served_model(self) -> None:
            return None

        def draw_identity(self) -> None:
            return None

        def run(self, jobs: Sequence[GenerationRequest], emit: Emit) -> None:
            use_tqdm = engine_requests(len(jobs), sum(job.max_tokens for job in jobs))
            if use_tqdm:
                assert callable(use_tqdm)
                assert list(use_tqdm(jobs, desc="Rendering prompts")) == list(jobs)  # passed through
                engine_bar = use_tqdm(total=len(jobs), desc="Processed prompts", dynamic_ncols=True,
                                      postfix="")
                for _ in jobs:
                    speed = 1 / engine_bar.format_dict["elapsed"]
                    engine_bar.postfix = f"est. speed input: {speed:.2f} toks/s"
                    engine_bar.update(1)
                engine_bar.close()
            emit([(j, SampleResult(Completion("x", "stop", 1))) for j in range(len(jobs))])

    with generation_progress("answers: generate"):
        CachedGenerator(Engine()).generate(_asked(3, max_tokens=7))
    bar = recorder.made[-1]
    assert bar.steps == [7, 7, 7, 0] and (bar.n, bar.total) == (21, 21)
    assert bar.postfixes[:3] == [f"0/3 prompts, {k}/3 samples of the batch" for k in (1, 2, 3)]
    assert engine_requests(3, 21) is False  # no generate bar open: vLLM draws no bar of its own either


# a status line shown (it lasts past STATUS_AFTER_SECONDS), one nested in a bar, then a stage's line
STATUS_THEN_LINE = ("import time\n"
                    "from a2c.system.progress import bar, generation_progress, status, ticking\n"
                    "with generation_progress('generate'):\n"
                    "    with status('preparing the run'):\n"
                    "        time.sleep(1.6)\n"
                    "    print('variation: runs (not run before)', flush=True)\n"
                    "    with ticking(bar(total=1, desc='metrics', leave=True, disable=False)) as shown:\n"
                    "        with status('accuracy: rouge1'):\n"
                    "            time.sleep(1.6)\n"
                    "        shown.update(1)\n"
                    "    print('report: runs (not run before)', flush=True)\n")


def test_a_status_line_is_cleared_before_the_next_line_on_a_terminal(tmp_path):
    """A status line drawn only by the clock's redraws (nothing else updates it) is still cleared when
    its work ends: the next stage's line starts on a line of its own, not after `… 00:01`."""
    raw = on_a_terminal([sys.executable, "-c", STATUS_THEN_LINE], tmp_path, _env())
    assert "preparing the run … 00:01" in raw and "accuracy: rouge1 … 00:01" in raw  # both were drawn
    shown = [line for line in screen(raw) if line]
    assert shown[0] == "variation: runs (not run before)", shown
    assert shown[1].startswith("metrics: 100%|") and shown[2] == "report: runs (not run before)", shown
    assert len(shown) == 3, shown  # nothing of either status line is left on the screen


def test_a_log_gets_the_stage_lines_whole_and_no_status_line(tmp_path):
    result = subprocess.run([sys.executable, "-c", STATUS_THEN_LINE], cwd=tmp_path, capture_output=True,
                            text=True, timeout=600, env=_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["variation: runs (not run before)", "report: runs (not run before)"]
    assert "…" not in result.stderr and "metrics: 100%|" in result.stderr
