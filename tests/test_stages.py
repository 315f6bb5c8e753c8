"""The fast tier: stage logic on the deterministic `scripted` backend, in milliseconds per stage.

What re-runs when the config or a file changes, what an interrupted stage repeats, the sets before and
after Ask-to-Choose and their counts, and that `AskToChoose` (what `a2c probe` runs) asks exactly the
prompts of `a2c run` and gets the same rows. The real embedded model runs in test_pipeline.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from a2c.choose import AskToChoose
from a2c.llm import GenerationRequest, build_generator
from a2c.llm.scripted import ScriptedBackend
from a2c.qa import stages
from a2c.qa.config import ExperimentConfig
from a2c.qa.data import load_records
from a2c.qa.report import write_report
from a2c.qa.rows import (
    CHOICES,
    GENERATIONS,
    MATRICES,
    METRICS,
    PARAPHRASES,
    SELECTION_SCORES,
    SELECTIONS,
    Question,
    RunFile,
    SelectionRow,
)
from a2c.qa.scoring import score_answers
from a2c.qa.selection_accuracy import SelectionAccuracy
from a2c.qa.stages import STAGES
from a2c.qa.stages import QAContext as RunContext
from a2c.qa.task import load_data
from a2c.run.pipeline import RunFolderError, RunResult, claim_run_folder, report_run, run_experiment
from a2c.run.runfiles import RunFileError
from a2c.run.stage import Generators, Stage, run_stages
from a2c.run.store import MemoryStore, RunFolder
from tests.scale_runs import scale_config

# replies: option numbers, option texts, a two-line one; as paraphrases only the question passes the checks
SCRIPT = "scripted:1|2|Paris|Rome\nMadrid|Which one?"
EVERY_STAGE = ["variation", "answers", "judges_before", "ask_to_choose", "judges_after", "selection",
               "metrics", "report"]


def _config(tmp: Path, **changes: Any) -> ExperimentConfig:
    data: dict[str, Any] = {
        "name": "fast", "limit": 3, "output": str(tmp / "run"),
        "generator": {"backend": "scripted", "model": SCRIPT, "cache": str(tmp / "cache.sqlite")},
        "judges": ["exact"], "accuracy": {"similarities": ["rouge1"]},
    }
    for key, value in changes.items():
        section, _, field = key.partition(".")
        if field:
            data.setdefault(section, {})[field] = value
        else:
            data[key] = value
    return ExperimentConfig.model_validate(data)


def _ran(result: RunResult) -> list[str]:
    return [name for name, stats in result.stages.items() if not stats.skipped]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run (folder and request cache) that each test copies and changes."""
    root = tmp_path_factory.mktemp("fast")
    run_experiment(_config(root), progress=False)
    return root


@pytest.fixture
def root(finished: Path, tmp_path: Path) -> Path:
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True)  # the run, and the cache with its WAL files
    return tmp_path


def test_the_same_config_again_reuses_every_stage(root):
    lines: list[str] = []
    result = run_experiment(_config(root), progress=False, log=lines.append)
    assert _ran(result) == [] and list(result.stages) == EVERY_STAGE
    assert lines[0] == "variation: reused (same config slice and inputs)"
    assert "done earlier" in result.summary_table()


def test_new_judges_rerun_judges_metrics_and_report_with_no_model_call(root):
    before = (root / "run" / "generations.jsonl").read_text()
    result = run_experiment(_config(root, judges=["exact", "rouge1"]), progress=False)
    assert _ran(result) == ["judges_before", "judges_after", "metrics", "report"]
    assert result.stages["judges_before"].why == "config changed: judges"
    assert result.stages["metrics"].why == ("config changed: thresholds; "
                                            "input changed: matrices_before.npz, matrices_after.npz")
    totals = result.totals()
    assert totals.generated == totals.cached == 0  # not one request, not even to the cache
    assert totals.judge_pairs_scored > 0
    folder = RunFolder(root / "run")
    assert {j for row in folder.read_rows(METRICS) for j in row.judges} == {"exact", "rouge1"}
    assert (root / "run" / "generations.jsonl").read_text() == before


def test_a_new_threshold_reruns_metrics_and_an_unchanged_output_stops_there(root):
    before = (root / "run" / "metrics.jsonl").read_bytes()
    # `exact` scores only 0 or 1: another threshold changes no decision, so metrics come out the same
    result = run_experiment(_config(root, judges=[{"name": "exact", "threshold": 0.9}]), progress=False)
    assert _ran(result) == ["metrics"]
    assert (root / "run" / "metrics.jsonl").read_bytes() == before


def test_each_pick_gets_the_scores_of_its_own_text_scored_once_with_its_sets_answers(tmp_path, monkeypatch):
    """A pick is one of its set's answers (or the "don't know" option's text): the before phase scores it with
    them, so a picked answer is not scored a second time, and its row holds what scoring its text alone
    gives. The stand-in model of the scale runs picks both kinds."""
    scored: list[int] = []
    real = stages.accuracy_columns

    def counting(rule, rule_options, similarities, answers, records, **given):
        scored.append(len(answers))
        return real(rule, rule_options, similarities, answers, records, **given)

    monkeypatch.setattr(stages, "accuracy_columns", counting)
    config = scale_config(tmp_path, 8)
    run_experiment(config, progress=False)
    folder = RunFolder(tmp_path / "run")
    records = {r.id: r for r in load_data(config)}
    picks, scores = folder.read_rows(SELECTIONS), folder.read_rows(SELECTION_SCORES)
    generations, choices = folder.read_rows(GENERATIONS), folder.read_rows(CHOICES)
    answers: dict[tuple[str, str], list[str]] = {}
    for g in generations:
        answers.setdefault((g.id, g.source), []).append(g.short)
    others = [p for p in picks if p.text is not None
              and (p.candidate is None or answers[(p.id, p.source)][p.candidate] != p.text)]
    assert others and len(others) < sum(p.text is not None for p in picks)  # both kinds are in this run
    assert sum(scored) == len(generations) + sum(c.text is not None for c in choices) + len(others)
    by_key = {(row.id, row.source, row.method): row for row in scores}
    for pick in picks:
        row = by_key[(pick.id, pick.source, pick.method)]
        for sim in ("rouge1", "bleu"):
            mine = row.accuracy[sim]
            if pick.text is None:
                assert mine is None
            else:
                alone = score_answers(sim, [pick.text], [records[pick.id]])[0]
                assert mine is not None
                assert (mine.max_true, mine.diff, mine.acc) == (alone.max_true, alone.diff, alone.acc)


def test_a_pick_of_a_method_the_experiment_does_not_select_with_is_named():
    accuracy = SelectionAccuracy([Question("q1", "Why?")], ["a2c", "medoid"], ["rouge1"])
    pick = SelectionRow(id="q1", source="temperature", method="usc", text="x", candidate=0, calls=1)
    with pytest.raises(RunFileError, match=r"a pick of method 'usc', which the experiment does not select "
                                           r"with \(a2c, medoid\)"):
        accuracy.pick_row(pick, referenced=True)


def test_new_temperatures_rerun_answers_onward(root):
    result = run_experiment(_config(root, **{"variation.temperatures": [0.5, 1.5]}), progress=False)
    assert _ran(result) == EVERY_STAGE[1:]
    assert result.stages["answers"].why == "config changed: temperatures"
    generations = RunFolder(root / "run").read_rows(GENERATIONS)
    assert sorted({g.temperature for g in generations if g.source == "temperature"}) == [0.5, 1.5]


def _truncate(lines: list[str]) -> list[str]:
    return lines[:-2]


def _garble(lines: list[str]) -> list[str]:
    return [*lines[:3], lines[3][: len(lines[3]) // 2] + "\n", *lines[4:]]


def _edit(lines: list[str]) -> list[str]:
    row = json.loads(lines[0])
    row["short"] = "an answer typed in by hand"
    return [json.dumps(row) + "\n", *lines[1:]]


def _reorder(lines: list[str]) -> list[str]:
    return lines[::-1]


@pytest.mark.parametrize("damage", [_truncate, _garble, _edit, _reorder])
def test_a_damaged_stage_file_is_made_again_from_the_cache_and_nothing_after_it_changes(root, damage):
    path = root / "run" / "generations.jsonl"
    clean = path.read_bytes()
    metrics = (root / "run" / "metrics.jsonl").read_bytes()
    path.write_text("".join(damage(clean.decode().splitlines(keepends=True))))
    lines: list[str] = []
    result = run_experiment(_config(root), progress=False, log=lines.append)
    assert _ran(result) == ["answers"]  # the same file again: every reader of it is reused
    assert lines[1] == ("answers: runs (output damaged or edited since it was written: generations.jsonl; "
                        "made again, the request cache serves its model calls)")
    assert result.stages["answers"].generated == 0 and result.stages["answers"].cached > 0
    assert path.read_bytes() == clean
    assert (root / "run" / "metrics.jsonl").read_bytes() == metrics


def test_a_damaged_run_json_is_refused_and_force_starts_over(root):
    (root / "run" / "run.json").write_text('{"name": "fa')
    with pytest.raises(RunFolderError, match=r"run\.json is damaged") as caught:
        run_experiment(_config(root), progress=False)
    assert "--force" in (caught.value.hint or "")
    result = run_experiment(_config(root), progress=False, force=True)
    assert _ran(result) == EVERY_STAGE
    assert result.totals().generated == 0  # the request cache held every call


def test_report_on_a_damaged_run_says_how_to_repair_it(root):
    path = root / "run" / "generations.jsonl"
    path.write_text(path.read_text()[:-40])
    with pytest.raises(RunFolderError, match=r"stale or changed — answers: output damaged or edited since it "
                       r"was written: generations\.jsonl;") as caught:
        report_run(root / "run")
    assert caught.value.hint is not None and "a2c run" in caught.value.hint


def test_an_interrupted_stage_reruns_from_the_cache_and_same_outputs_stop_the_wave(root):
    (root / "run" / "stages" / "ask_to_choose.json").unlink()  # killed before it marked itself done
    (root / "run" / "report.md").unlink()  # an output gone: its stage runs again
    result = run_experiment(_config(root), progress=False)
    assert _ran(result) == ["ask_to_choose", "report"]
    assert result.stages["ask_to_choose"].why == "not run before"
    assert result.stages["ask_to_choose"].generated == 0 and result.stages["ask_to_choose"].cached > 0
    assert result.stages["report"].why == "output missing: report.md"


def test_turning_a2c_off_removes_its_files(root):
    result = run_experiment(_config(root, **{"ask_to_choose.enabled": False}), progress=False)
    # the default selection, [a2c], picks nothing without A2C
    assert _ran(result) == ["selection", "metrics", "report"]
    assert RunFolder(root / "run").read_rows(SELECTIONS) == []
    assert "ask_to_choose" not in result.stages
    for name in ("choices.jsonl", "matrices_after.npz", "stages/ask_to_choose.json",
                 "stages/judges_after.json"):
        assert not (root / "run" / name).exists(), name
    assert {row.phase for row in RunFolder(root / "run").read_rows(METRICS)} == {"before"}


def test_slices_hold_settings_not_paths_chunks_caches_or_batches(tmp_path):
    # an in-process backend, which has a batch size (a slice loads no model)
    generator = {"backend": "transformers", "model": "m", "device": "cpu",
                 "cache": str(tmp_path / "c.sqlite")}
    base = _config(tmp_path, generator=generator)
    logistics = _config(tmp_path / "elsewhere", chunk_size=1, judges=[{"name": "exact", "cache": None}],
                        generator={**generator, "cache": None, "batch_size": 2, "context_policy": "refuse"})
    assert [s.config_slice(logistics) for s in STAGES] == [s.config_slice(base) for s in STAGES]
    seeded = _config(tmp_path, seed=1, generator=generator)
    assert [s.name for s in STAGES if s.config_slice(seeded) != s.config_slice(base)] == [
        "variation", "answers", "ask_to_choose"]


def test_sets_before_and_after_counts_and_masks(finished):
    folder = RunFolder(finished / "run")
    paraphrases, generations = folder.read_rows(PARAPHRASES), folder.read_rows(GENERATIONS)
    choices, metrics = folder.read_rows(CHOICES), folder.read_rows(METRICS)
    failed = {(p.id, slot) for p in paraphrases for slot, x in enumerate(p.paraphrases) if not x.ok}
    assert failed, "the script should make some paraphrase fail its checks"
    # a failed paraphrase is left out of Y_c: no answer for its slot
    answered = {(g.id, g.slot) for g in generations if g.source == "paraphrase"}
    assert not failed & answered and len(answered) + len(failed) == 3 * 4
    before, after = folder.read_matrices(MATRICES["before"]), folder.read_matrices(MATRICES["after"])
    for row in metrics:
        if row.phase == "before":
            texts = [g.short for g in generations if g.id == row.id and g.source == row.source]
        else:
            texts = [c.text for c in choices if (c.id, c.source) == (row.id, row.source) and c.parsed]
        assert row.n == len(texts)
        matrices = before if row.phase == "before" else after
        assert matrices[("exact", row.source, row.id)].shape == (row.n, row.n)
        assert 0 <= row.n_accurate <= row.n
        assert (row.accuracy["rouge1"] is None) == (row.n == 0)
    summary = folder.read_json("summary.json")["counts"]
    assert summary["paraphrases_failed"] == len(failed)
    for source in ("paraphrase", "temperature"):
        mine = [c for c in choices if c.source == source]
        assert summary["choices"][source]["unparsed"] == sum(not c.parsed for c in mine)
        assert summary["choices"][source]["idk"] == sum(c.dont_know for c in mine)


def test_a_folder_of_another_experiment_or_no_run_is_refused_unless_forced(finished, tmp_path):
    with pytest.raises(RunFolderError, match="holds a run of experiment 'fast', not 'other'"), \
            claim_run_folder(_config(tmp_path, name="other"), finished / "run", force=False):
        pass
    stray = tmp_path / "stray"
    (stray / "notes").mkdir(parents=True)
    (stray / "notes" / "notes.txt").write_text("mine")
    with pytest.raises(RunFolderError, match="holds no a2c run"), \
            claim_run_folder(_config(tmp_path), stray, force=False):
        pass
    with claim_run_folder(_config(tmp_path), stray, force=True) as folder:
        assert folder.read_json("run.json") == {"name": "fast"} and (stray / "notes" / "notes.txt").is_file()


def test_force_deletes_only_what_a2c_wrote_and_a_folder_with_other_files_is_refused(finished, tmp_path):
    import subprocess

    # a run of another experiment, beside a real git repository and notes in subfolders a2c never writes
    project = tmp_path / "project"
    shutil.copytree(finished / "run", project)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "notes").mkdir()
    (project / "notes" / "todo.md").write_text("keep me")
    git = sorted(p.relative_to(project) for p in (project / ".git").rglob("*"))
    with claim_run_folder(_config(tmp_path, name="other"), project, force=True):
        pass
    kept = [".a2c.lock", ".git", "config.yaml", "notes", "run.json"]
    assert sorted(p.name for p in project.iterdir()) == kept
    assert sorted(p.relative_to(project) for p in (project / ".git").rglob("*")) == git
    assert (project / "notes" / "todo.md").read_text() == "keep me"

    # a file a2c did not write at the top (the config itself, say): refused, --force or not, nothing deleted
    (project / "exp.yaml").write_text("name: other\n")
    listing = sorted(p.name for p in project.iterdir())
    for force in (False, True):
        with pytest.raises(RunFolderError, match=r"holds files a2c did not write \(exp\.yaml\)"), \
                claim_run_folder(_config(tmp_path, name="third"), project, force=force):
            pass
    assert sorted(p.name for p in project.iterdir()) == listing


# with seed 4 one paraphrase of the question fails its checks, with seed 0 three: both leave them out of Y_c
@pytest.mark.parametrize(("seed", "failed"), [(4, 1), (0, 3)])
def test_probe_and_run_ask_the_same_prompts_and_get_the_same_rows(tmp_path, monkeypatch, seed, failed):
    asked: list[GenerationRequest] = []
    run_backend = ScriptedBackend.run

    def recording(self, jobs, emit):
        asked.extend(jobs)
        run_backend(self, jobs, emit)

    monkeypatch.setattr(ScriptedBackend, "run", recording)
    uncached = {"backend": "scripted", "model": SCRIPT, "cache": None}
    config = _config(tmp_path, limit=1, seed=seed, generator=uncached)
    run_experiment(config, progress=False)
    run_prompts, folder = list(asked), RunFolder(tmp_path / "run")
    asked.clear()

    question = load_records("quickstart", limit=1)[0].question
    choice = AskToChoose(build_generator(config.generator), seed=seed).answer(question)
    assert asked == run_prompts  # the same requests in the same order: paraphrases, answers, rank prompts

    def without_id(rows: list) -> list[dict]:
        return [row.model_dump(exclude={"id"}) for row in rows]

    assert without_id(choice.generations) == without_id(folder.read_rows(GENERATIONS))
    assert without_id(choice.choices) == without_id(folder.read_rows(CHOICES))
    y_c = [g.short for g in choice.generations if g.source == "paraphrase"]
    assert choice.candidates[:len(y_c)] == y_c
    assert sum(not p.ok for row in folder.read_rows(PARAPHRASES) for p in row.paraphrases) == failed
    assert len(y_c) == 4 - failed and len(choice.asked) == len(choice.candidates) == len(choice.generations)
    assert json.loads(json.dumps(choice.consistency)) == choice.consistency


def test_run_probe_and_wrapper_ask_the_same_prompts_under_non_default_budgets(tmp_path, monkeypatch, capsys):
    """Every budget and decoding setting of a config reaches the wrapper (`variation=`, `a2c=`) and probe
    (`--config`): the three ask exactly the same requests for the same question and seed."""
    from a2c.cli import main

    asked: list[GenerationRequest] = []
    run_backend = ScriptedBackend.run

    def recording(self, jobs, emit):
        asked.extend(jobs)
        run_backend(self, jobs, emit)

    monkeypatch.setattr(ScriptedBackend, "run", recording)
    settings = {"generator": {"backend": "scripted", "model": SCRIPT, "cache": None}, "seed": 3, "limit": 1,
                "variation": {"paraphrase_max_tokens": 21, "long_max_tokens": 33, "short_max_tokens": 5,
                              "temperatures": [0.3, 0.9], "top_p": 0.8, "samples": 2,
                              "paraphrase_temperature": 0.4, "techniques": ["synonyms", "conjunctions"]},
                "ask_to_choose": {"max_tokens": 3, "rank_temperature": 0.2, "idk_text": "No idea"}}
    config = _config(tmp_path, **settings)
    run_experiment(config, progress=False)
    run_prompts = list(asked)
    assert {r.max_tokens for r in run_prompts} == {21, 33, 5, 3}  # every budget was used
    question = load_records("quickstart", limit=1)[0].question

    asked.clear()
    AskToChoose(build_generator(config.generator), variation=config.variation, a2c=config.ask_to_choose,
                seed=config.seed).answer(question)
    assert asked == run_prompts

    asked.clear()
    path = tmp_path / "probe.yaml"
    path.write_text(json.dumps({"name": "probe", **settings}))
    assert main(["probe", question, "--config", str(path), "--backend", "scripted", "--model", SCRIPT,
                 "--judge", "exact", "--no-cache"]) == 0
    assert asked[:len(run_prompts)] == run_prompts  # then the judges (exact asks no model)
    assert "A2C answer:" in capsys.readouterr().out


def test_stage_stats_count_every_generation_counter_including_cut_prompts(tmp_path):
    """Each stage reports the deltas of every generator it used, `truncated` (prompts cut to fit) too."""
    config = _config(tmp_path)
    main = build_generator(config.generator)
    aux = build_generator(config.generator, model="scripted:x|y")

    def ask(ctx: RunContext, stats: Any) -> None:
        for generator, cut in ((ctx.generator, 2), (ctx.aux, 1)):
            generator.generate([GenerationRequest(prompt=f"Q{i}?", max_tokens=4) for i in range(3)])
            generator.stats.truncated += cut  # as a backend counts a prompt it cut
        ctx.store.write_text("out.txt", "done")

    stage = Stage("ask", reads=(), writes=(RunFile("out.txt"),), config_slice=lambda c: {}, run=ask)
    ctx = RunContext(config, MemoryStore(), [], generators=Generators(main, aux))
    first = run_stages(ctx, [stage])["ask"]
    assert (first.generated + first.cached, first.truncated) == (6, 3)
    assert first.prompt_tokens > 0
    ctx.store.delete(stage.marker)
    again = run_stages(ctx, [stage])["ask"]  # counts are deltas: the second run adds its own only
    assert (again.generated, again.cached, again.truncated) == (0, 6, 3)


@pytest.mark.parametrize("cache", [True, False])
def test_a_stage_that_failed_is_named_unfinished_on_the_rerun(tmp_path, cache):
    """A stage that raised (as one Ctrl-C stops) is said to have started and not finished, whether the
    request cache serves what it did; once it finishes, the next run reuses it."""
    config = _config(tmp_path, **({} if cache else {"generator.cache": None}))
    failing = True

    def write(ctx: RunContext, stats: Any) -> None:
        if failing:
            raise RuntimeError("stopped half-way")
        ctx.store.write_text("out.txt", "done")

    stage = Stage("write", reads=(), writes=(RunFile("out.txt"),), config_slice=lambda c: {}, run=write)
    generator = build_generator(config.generator)
    ctx = RunContext(config, MemoryStore(), [], generators=Generators(generator, generator))
    said: list[str] = []
    with pytest.raises(RuntimeError):
        run_stages(ctx, [stage], said.append)
    failing = False
    run_stages(ctx, [stage], said.append)
    run_stages(ctx, [stage], said.append)
    resumed = ("resumed: the request cache serves the model calls it made" if cache
               else "runs again from its start (no request cache)")
    assert said == ["write: runs (not run before)",
                    f"write: runs (interrupted or failed before it finished last time; {resumed})",
                    "write: reused (same config slice and inputs)"]
    assert not ctx.store.exists(stage.started_marker)


def test_the_summary_counts_prompts_cut_to_fit_by_the_stages_that_made_the_outputs(root):
    run = root / "run"
    assert json.loads((run / "summary.json").read_text())["counts"]["prompts_cut_to_fit_context"] == 0
    # as a backend with a small context would count them
    for stage, cut in (("answers", 4), ("ask_to_choose", 1)):
        marker = json.loads((run / "stages" / f"{stage}.json").read_text())
        marker["stats"]["truncated"] = cut
        (run / "stages" / f"{stage}.json").write_text(json.dumps(marker))
    report_run(run)
    counts = json.loads((run / "summary.json").read_text())["counts"]
    assert counts["prompts_cut_to_fit_context"] == 5
    assert "| prompts cut to fit context | 5 |" in write_report(RunFolder(run))


def test_run_experiment_takes_the_run_folder_as_text_too(root):
    result = run_experiment(_config(root), run_dir=str(root / "run"), progress=False)
    assert _ran(result) == [] and result.folder == root / "run"


def test_timings_keep_the_run_that_did_the_work_and_the_cli_ends_with_the_table(root, capsys):
    from a2c.cli import main

    first = json.loads((root / "run" / "timings.json").read_text())
    config = root / "exp.yaml"
    config.write_text(json.dumps(_config(root).model_dump(mode="json")))
    assert main(["run", str(config), "--no-progress"]) == 0
    out = capsys.readouterr().out
    again = json.loads((root / "run" / "timings.json").read_text())
    # a fully reused rerun keeps every stage's original seconds and says what it took itself
    assert again["stages"] == first["stages"] and again["seconds"] == pytest.approx(
        sum(s["seconds"] for s in first["stages"].values()))
    assert again["last_invocation"]["ran"] == [] and again["last_invocation"]["seconds"] > 0
    assert "\n| method " in out and " R1-A " in out and "Before → after Ask-to-Choose" in out
    assert out.rstrip().endswith(f"report: {root / 'run' / 'report.md'}")
    assert main(["run", str(config), "--no-progress", "--quiet"]) == 0
    assert "| method " not in capsys.readouterr().out


def test_a2c_report_then_a2c_run_reuses_the_report(root):
    """`a2c report` rewrites the report and records it in the report stage's marker, and report.md holds no
    line that changes without its inputs (no wall time), so the next run reuses every stage."""
    from a2c.run.pipeline import report_run

    before = (root / "run" / "report.md").read_text()
    assert "last invocation" not in before
    report_run(root / "run")
    assert (root / "run" / "report.md").read_text() == before
    result = run_experiment(_config(root), progress=False)
    assert _ran(result) == [] and result.stages["report"].why == "same config slice and inputs"


def test_a_killed_runs_half_written_stream_is_removed_and_a_look_alike_of_another_file_is_refused(finished,
                                                                                                  tmp_path):
    run = tmp_path / "killed"
    shutil.copytree(finished / "run", run)
    (run / ".generations.jsonl.4242.0bb28fcf.tmp").write_text('{"id": "half a row')  # kill -9 mid-stage
    with claim_run_folder(_config(tmp_path), run, force=False):
        pass
    assert not any(p.name.endswith(".tmp") for p in run.iterdir())

    # the same shape around a name a2c never writes is someone else's file: refused, not deleted
    (run / ".notes.txt.4242.0bb28fcf.tmp").write_text("mine")
    with pytest.raises(RunFolderError, match=r"holds files a2c did not write \(\.notes\.txt\.4242"), \
            claim_run_folder(_config(tmp_path), run, force=True):
        pass
    assert (run / ".notes.txt.4242.0bb28fcf.tmp").read_text() == "mine"
