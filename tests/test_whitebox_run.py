"""White-box measures in a run: `variation.logprobs` asks for the long answers' token log-probabilities in
the same requests, the rows keep them, and the metrics stage computes each answer's MSP and perplexity
into the uncertainty rows and the signal table; a run without them writes what it wrote before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from a2c.metrics.whitebox import log_perplexity, maximum_sequence_probability
from a2c.qa.rows import GENERATIONS, UNCERTAINTY
from a2c.run.config_file import load_config
from a2c.run.pipeline import run_experiment
from a2c.run.store import RunFolder

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "scripted-spread:Paris|London|I have no comment|1|2"


def _run(tmp: Path, name: str, *settings: str):
    config = load_config(ROOT / "experiments" / "quickstart.yaml", overrides=[
        f"output={tmp / name}", "limit=4", "judges=[exact, rouge1]", "accuracy.similarities=[rouge1]",
        "variation.meaning_check=null",
        f"generator={{backend: scripted, model: '{SCRIPT}', cache: {tmp / 'cache.sqlite'}}}", *settings])
    return run_experiment(config, progress=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("whitebox")
    return _run(tmp, "plain"), _run(tmp, "logprobs", "variation.logprobs=0")


def test_the_answers_keep_their_log_probabilities_at_no_extra_call(runs):
    plain, asked = runs
    rows = list(RunFolder(asked.folder).iter_rows(GENERATIONS))
    assert rows and all(r.token_logprobs and all(lp <= 0 for lp in r.token_logprobs) for r in rows)
    # the long answer's own request carries them: a long and a short request per answer, no third
    answers = asked.stages["answers"]
    assert answers.generated + answers.cached <= 2 * len(rows)
    assert "token_logprobs" not in RunFolder(plain.folder).read_text(GENERATIONS.name)


def test_each_answers_msp_and_perplexity_are_the_whitebox_functions_of_its_tokens(runs):
    _, asked = runs
    store = RunFolder(asked.folder)
    tokens: dict[tuple[str, str], list[np.ndarray]] = {}
    for row in store.iter_rows(GENERATIONS):
        tokens.setdefault((row.id, row.source), []).append(np.asarray(row.token_logprobs))
    measured = 0
    for row in store.iter_rows(UNCERTAINTY):
        if row.phase != "before" or len(tokens.get((row.id, row.source), [])) < 2:
            continue
        given = tokens[(row.id, row.source)]
        assert row.answers["maximum_sequence_probability"]["tokens"] == pytest.approx(
            maximum_sequence_probability(given).tolist(), abs=1e-12)
        assert row.answers["perplexity"]["tokens"] == pytest.approx(log_perplexity(given).tolist(), abs=1e-12)
        measured += 1
    assert measured > 0
    after = [r for r in store.iter_rows(UNCERTAINTY) if r.phase == "after"]
    assert all("maximum_sequence_probability" not in r.answers for r in after)  # rank replies have none


def test_the_signal_table_holds_the_whitebox_signals_only_where_asked(runs):
    plain, asked = runs
    names = {row["metric"] for row in json.loads(RunFolder(asked.folder).read_text("summary.json"))["signal"]}
    assert "-MSP (tokens, per answer)" in names and "-PPL (tokens, per answer)" in names
    plain_summary = json.loads(RunFolder(plain.folder).read_text("summary.json"))
    plain_names = {row["metric"] for row in plain_summary["signal"]}
    assert not any("tokens" in name for name in plain_names)
    assert "maximum_sequence_probability" not in RunFolder(plain.folder).read_text(UNCERTAINTY.name)


def test_asking_for_log_probabilities_reruns_the_answers_and_the_config_checks_k(runs, tmp_path):
    _, asked = runs
    assert asked.stages["answers"].why == "not run before"
    with pytest.raises(Exception, match=r"variation\.logprobs"):
        load_config(ROOT / "experiments" / "quickstart.yaml", overrides=["variation.logprobs=-1"])


def test_a_samples_file_with_log_probabilities_gets_the_whitebox_signals(tmp_path):
    rows = []
    for k, (question, gold) in enumerate([("What is the capital of France?", "Paris"),
                                          ("What is the capital of Italy?", "Rome"),
                                          ("What is the capital of Spain?", "Madrid")]):
        samples = [{"text": text, "temperature": 1.0, "logprobs": [-0.1 * (j + 1), -0.2 * (k + 1)]}
                   for j, text in enumerate([gold, "London", gold])]
        rows.append({"id": f"q{k}", "question": question, "correct": [gold], "incorrect": ["London"],
                     "answer": gold, "samples": samples})
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = load_config(ROOT / "experiments" / "own-samples.yaml", overrides=[
        f"dataset.path={path}", f"output={tmp_path / 'run'}", "judges=[exact, rouge1]"])
    result = run_experiment(config, progress=False)
    store = RunFolder(result.folder)
    found = [r.answers["maximum_sequence_probability"]["tokens"] for r in store.iter_rows(UNCERTAINTY)
             if r.source == "temperature"]
    assert found[0] == pytest.approx([0.3, 0.4, 0.5])


def test_a_server_without_log_probabilities_is_refused_in_one_line_naming_it(tmp_path, capsys):
    from a2c.cli import main
    from tests.fake_openai import SlowServer

    server = SlowServer()  # answers every request, with no `logprobs` in its choices
    try:
        config = tmp_path / "c.yaml"
        config.write_text(
            "name: nolp\ndataset: {name: quickstart}\nlimit: 1\njudges: [exact]\n"
            "accuracy: {similarities: [rouge1]}\nask_to_choose: {enabled: false}\n"
            f"variation: {{logprobs: 0, techniques: [synonyms], temperatures: [0.5]}}\n"
            f"generator: {{backend: openai, model: m, base_urls: ['{server.url}'], cache: null, "
            "max_retries: 0}\n", encoding="utf-8")
        assert main(["run", str(config), "--output", str(tmp_path / "run"), "--no-progress"]) != 0
    finally:
        server.stop()
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if "log-probabilities" in line)
    assert server.url in line and "variation.logprobs" in line and "MSP" in line
    assert "Traceback" not in err
