"""Classification task end to end: config errors at load, a run on the scripted backend (files, reuse,
resume), and a small run on the embedded SmolLM2 (marked slow)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from a2c.classification import ClassificationConfig
from a2c.classification.rows import INPUTS, LABELS, REWRITES
from a2c.cli import main
from a2c.common.errors import A2CError
from a2c.data.errors import DatasetError
from a2c.metrics.calm import reverse_consistency
from a2c.run.config_file import load_config
from a2c.run.pipeline import run_experiment
from a2c.run.store import RunFolder
from a2c.settings.config import ConfigError

EXPERIMENT = Path(__file__).resolve().parents[1] / "experiments" / "nli-consistency.yaml"
SCRIPT = "scripted:entailment|neutral|contradiction|no idea"


# -- config load ---------------------------------------------------------------------------------------------

def _yaml(tmp: Path, text: str) -> Path:
    path = tmp / "exp.yaml"
    path.write_text(text)
    return path


DATA_CONFIG = ("name: x\ntask: classification\ndataset:\n  path: {path}\n"
               "  labels: [entailment, contradiction]\n")


def test_the_shipped_experiment_loads_with_the_papers_settings():
    config = load_config(EXPERIMENT)
    assert isinstance(config, ClassificationConfig)
    assert config.suites.calm.used_symbols == ["[]", "{}", "()", "<>", ";", "#", "!", "@", "~", "-"]
    assert config.suites.calm.threshold == 1.0
    assert config.suites.becel.symmetric_labels == ["contradiction"]


def test_a_label_outside_the_set_fails_at_load_naming_file_and_line(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text('{"premise": "P", "hypothesis": "H", "label": "entailment"}\n'
                    '{"premise": "P", "hypothesis": "H2", "label": "maybe"}\n')
    with pytest.raises(DatasetError) as err:
        load_config(_yaml(tmp_path, DATA_CONFIG.format(path=data)))
    assert str(err.value).startswith(f"{data}:2: label 'maybe' is not in the label set")
    assert "\n" not in str(err.value)


def test_a_pair_task_without_a_hypothesis_column_fails_at_load(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("premise,label\nA cat sleeps.,entailment\n")
    with pytest.raises(DatasetError, match=r"d\.csv: no column 'hypothesis'"):
        load_config(_yaml(tmp_path, DATA_CONFIG.format(path=data)))


def test_mapped_columns_are_read(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("sentence1,sentence2,gold\nA cat sleeps.,A cat rests.,entailment\n")
    text = DATA_CONFIG.format(path=data) + \
        "  columns: {premise: sentence1, hypothesis: sentence2, label: gold}\n"
    config = load_config(_yaml(tmp_path, text))
    from a2c.classification.data import load_items

    [item] = load_items(config)
    assert (item.premise, item.hypothesis, item.label, item.id) == ("A cat sleeps.", "A cat rests.",
                                                                    "entailment", "item1")


@pytest.mark.parametrize(("text", "message"), [
    ("name: x\ntask: translation\n",
     "exp.yaml:2: task: unknown task 'translation'. Known: classification, qa."),
    ("name: x\ntask: classification\ndataset: {name: nli-quickstart, labels: [entailment, neutral, "
     "contradiction]}\nsuites:\n  calm:\n    treshold: 0.5\n",
     "exp.yaml:6: suites.calm.treshold: unknown key"),
    ("name: x\ntask: classification\ndataset: {name: nli-quickstart, labels: [pos, neg]}\n"
     "suites: {becel: {symmetric_labels: [neg, neutral]}}\n", "exp.yaml:4: suites: Value error, "
     "becel names label(s) ['contradiction', 'entailment', 'neutral'] outside the label set"),
    ("name: x\ntask: classification\ndataset: {name: nli-quickstart, labels: [a, a]}\n",
     "labels are listed twice"),
    ("name: x\ntask: classification\ndataset: {labels: [a, b]}\n", "give exactly one of `name`"),
])
def test_bad_configs_fail_at_load_in_one_line(tmp_path, text, message):
    with pytest.raises(ConfigError) as err:
        load_config(_yaml(tmp_path, text))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_builtin_labels_must_cover_the_data(tmp_path):
    text = "name: x\ntask: classification\ndataset: {name: nli-quickstart, labels: [entailment, neutral]}\n"
    with pytest.raises(A2CError, match=r"nli_quickstart\.jsonl:2: label 'contradiction' is not in"):
        load_config(_yaml(tmp_path, text))


def test_cli_reports_a_bad_config_in_one_line_with_status_2(tmp_path, capsys):
    path = _yaml(tmp_path, "name: x\ntask: nli\n")
    assert main(["run", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"a2c: error: {path}:2: task: unknown task 'nli'. Known: classification, qa. Plug-ins add names "
        "through the entry-point group a2c.tasks."]


# -- scripted end to end -------------------------------------------------------------------------------------

def _config(tmp: Path, **suites) -> ClassificationConfig:
    return ClassificationConfig.model_validate({
        "name": "cls-fast", "dataset": {"name": "nli-quickstart", "labels": ["entailment", "neutral",
                                                                            "contradiction"]},
        "generator": {"backend": "scripted", "model": SCRIPT, "cache": str(tmp / "cache.sqlite")},
        "output": str(tmp / "run"), "suites": suites})


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cls")
    run_experiment(_config(root), progress=False)
    return root


@pytest.fixture
def root(finished: Path, tmp_path: Path) -> Path:
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True)
    return tmp_path


def _ran(result) -> list[str]:
    return [name for name, stats in result.stages.items() if not stats.skipped]


def test_scripted_run_writes_every_file_and_counts_every_input(finished):
    folder = RunFolder(finished / "run")
    for name in ("run.json", "config.yaml", "rewrites.jsonl", "inputs.jsonl", "labels.jsonl", "summary.json",
                 "report.md", "timings.json"):
        assert folder.exists(name), name
    inputs = folder.read_rows(INPUTS)
    kinds: dict[str, int] = {}
    for row in inputs:
        kinds[row.kind] = kinds.get(row.kind, 0) + 1
    # 30 items (27 originals + 3 derived); 7 contradiction originals; 3 techniques per original; 10
    # symbols; negations: 4 in the data, 11 written for the other entailment originals, of which only the
    # scripted replies "no idea" hold a negation word and pass the checks
    rewrites = [r for r in folder.read_rows(REWRITES) if r.kind == "negation"]
    assert len(rewrites) == 11
    passed = [r for r in rewrites if r.ok]
    assert passed and {r.text for r in passed} == {"no idea"}
    assert kinds == {"original": 30, "paraphrase": 81, "negation": 4 + len(passed), "symmetric": 7,
                     "reverse": 27, "signal": 270}
    labels = folder.read_rows(LABELS)
    assert [r.key for r in labels] == [r.key for r in inputs]
    # the scripted model puts all mass on its reply: "no idea" is unparsed, the rest read from logprobs
    for row in labels:
        assert (row.label is None) == (row.reply == "no idea")
        assert row.method == ("unparsed" if row.label is None else "logprobs")
    summary = json.loads(folder.read_text("summary.json"))
    unparsed = sum(r.label is None for r in labels if r.kind == "signal")
    assert summary["kinds"]["signal"]["unparsed"] == unparsed
    # C_R recomputed from the files with the paper's function
    by_key = {r.key: r.label for r in labels}
    pairs = [(by_key[f"{i.item}|original|0"], by_key[i.key]) for i in inputs if i.kind == "reverse"]
    pairs = [p for p in pairs if None not in p]
    assert summary["calm"]["reverse"]["value"] == reverse_consistency(*zip(*pairs, strict=True))
    report = folder.read_text("report.md")
    for title in ("paper 000", "paper 001", "paper 003", "paper 004", "unparsed"):
        assert title in report


def test_rerun_reuses_everything_and_a_new_threshold_reruns_only_metrics_and_report(root):
    assert _ran(run_experiment(_config(root), progress=False)) == []
    result = run_experiment(_config(root, calm={"threshold": 0.5}), progress=False)
    assert _ran(result) == ["metrics", "report"]
    assert result.totals().generated == 0


def test_fewer_symbols_rerun_perturb_and_label_from_the_cache(root):
    result = run_experiment(_config(root, calm={"k": 4}), progress=False)
    assert _ran(result) == ["perturb", "label", "metrics", "report"]
    assert result.stages["label"].generated == 0 and result.stages["label"].cached > 0
    summary = json.loads((root / "run" / "summary.json").read_text())
    assert summary["calm"]["k"] == 4 and summary["kinds"]["signal"]["inputs"] == 27 * 4


def test_an_interrupted_label_stage_resumes_from_the_cache(root):
    (root / "run" / "labels.jsonl").unlink()
    (root / "run" / "stages" / "label.json").unlink()
    result = run_experiment(_config(root), progress=False)
    assert _ran(result) == ["label"]  # same labels back, so metrics and report are reused
    assert result.stages["label"].generated == 0


def test_a_folder_of_another_experiment_is_refused(root):
    from a2c.run.pipeline import RunFolderError

    other = _config(root).model_copy(update={"name": "someone-else"})
    with pytest.raises(RunFolderError, match="holds a run of experiment 'cls-fast'"):
        run_experiment(other, progress=False)


# -- the embedded model --------------------------------------------------------------------------------

@pytest.mark.slow
def test_report_rescores_a_classification_run_from_its_stored_labels(root, capsys):
    run = root / "run"
    summary, report = (run / "summary.json").read_text(), (run / "report.md").read_text()
    for name in ("summary.json", "report.md"):
        (run / name).unlink()
    assert main(["report", str(run)]) == 0
    assert (run / "summary.json").read_text() == summary  # recomputed from inputs and labels alone
    assert (run / "report.md").read_text() == report
    assert main(["report", str(run), "--human-labels", str(root / "labels.csv")]) == 2
    assert "--human-labels applies to QA runs" in capsys.readouterr().err


def test_embedded_model_run_end_to_end(tmp_path):
    """Four items (two contrast bundles), one paraphrase technique, k = 2: ~30 model calls."""
    config = ClassificationConfig.model_validate({
        "name": "cls-embedded", "limit": 4,
        "dataset": {"name": "nli-quickstart", "labels": ["entailment", "neutral", "contradiction"]},
        "generator": {"backend": "transformers", "cache": str(tmp_path / "cache.sqlite")},
        "suites": {"paraphrastic": {"techniques": ["synonyms"]}, "calm": {"k": 2}},
        "output": str(tmp_path / "run")})
    result = run_experiment(config, progress=False)
    # 4 paraphrases (+ retries of bad ones); labels: 4 originals + 4 paraphrases at most + 2 negations +
    # 2 symmetric + 4 reverse + 8 signal
    assert 4 <= result.stages["rewrite"].generated <= 8
    assert result.stages["label"].generated <= 24
    folder = RunFolder(tmp_path / "run")
    labels = folder.read_rows(LABELS)
    assert labels and all(r.method in ("logprobs", "text", "unparsed") for r in labels)
    # the transformers backend returns log-probabilities: labels are read from them
    assert sum(r.method == "logprobs" for r in labels) >= len(labels) // 2
    summary = json.loads(folder.read_text("summary.json"))
    assert summary["contrast"]["rows"][0]["bundles"] == 2
    for value in (summary["calm"]["reverse"]["value"], summary["becel"]["symmetric"]["value"]):
        assert value is None or 0.0 <= value <= 1.0
    assert "paper 004" in folder.read_text("report.md")
    # a rerun makes no model call
    again = run_experiment(config, progress=False)
    assert again.totals().generated == 0
