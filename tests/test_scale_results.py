"""A run's results do not change when its bookkeeping does: 200 synthetic questions on the scripted stand-in
model under the paper's protocol (tests/scale_runs.py) give exactly the files a2c gave before the stages
were made to stream (issue 36). The digests were computed with that earlier code; a change to the files
a run writes must be deliberate and update them here."""

from __future__ import annotations

import csv

from a2c.pipeline import run_experiment
from tests.scale_runs import result_digests, scale_config

EXPECTED = {
    "paraphrases.jsonl": "43575a208213f18cd5b02e252022a6279d51e70e6d0b81728dd7ca31aad6d908",
    "generations.jsonl": "013eb4fab4ccb1b3e4e736e7e0b1b42c09b654d1e3504bf5dac057050f8cfb79",
    "choices.jsonl": "3a294afbffee6b8facbf25af9ec755429c1818d10d64d338f0bd40353af27235",
    "selections.jsonl": "c8507e1b8f633c66fa1f160b4dad7b31ec4f9c78ff45b699179508303e7fc201",
    "metrics.jsonl": "827bf98789a006ff531b54fb83cdc38bebbfb0f7c6f996a00873f5bb4879f90c",
    "uncertainty.jsonl": "6dfafb3467fbc1252a9028981f106cf58bd87e80bf43ada82b2518481fa83c30",
    "selection_scores.jsonl": "10093ab6392154a73b178cf9b6828c7507a404e64d157cce798c04c8c7c0d726",
    "summary.json": "cd816864cc2a165f75d1ca7f2edd8747143892b50d87ee2d36560165e39d12f2",
    "matrices_before.npz": "a16b32cebc4f1ee4657130c1b6aa9c5293893ce3840800c87db482a78cdd3204",
    "matrices_after.npz": "cc197bbf4980fc0778848f488bf9665594d825e615c46b338196f0b2c7590e55",
    "report.md": "7bc55f444b9d2cb2ca3592e825c5c1f140ae1527d3dae251c86b6236da07751e",
    "table_before_after.csv": "69775db5aa668e05d7b279d923c036a2197c67be634494cc6b985aff583c128f",
    "table_accurate_answers.csv": "d8a1965421c08b96cfc240f0a7fe6e5cc25d59db394d6e2e973c57238498bac2",
    "counts.csv": "7a4d8393b5bff8a45bdbb3f312ad54ddb58f30e6dbc7de68f085f8945ff79860",
    "table_signal.csv": "4b08caab40f4c58ec166bd927b0f4d118dba23c209bc7a2737616f7d0d8b1d3f",
    "table_selection.csv": "a7afb523786aa75c45a1940f389a6bb517cdf302a956016004eff99b146507fb",
    "table_answer_or_decline.csv": "c71313b78b794dbd85e0faa97ae762fc0ece512c7e59497e9074a500559314ee",
}


def test_a_200_question_run_gives_the_stored_results(tmp_path):
    config = scale_config(tmp_path, 200)
    result = run_experiment(config, progress=False)
    # a few of the numbers behind the digests, so a failure shows what moved
    with (config.run_dir / "table_selection.csv").open(encoding="utf-8") as handle:
        table = {(r["method"], r["selection"]): r for r in csv.DictReader(handle)}
    assert table[("cross-temperature", "A2C")]["R1-A"] == "0.605"
    assert table[("in-context paraphrases", "Medoid")]["picked"] == "154 / 200"
    assert len(result.metrics) == 200 * 2 * 2  # questions × sources × phases
    changed = {name: digest for name, digest in result_digests(config.run_dir).items()
               if EXPECTED[name] != digest}
    assert not changed, f"result files differ from the stored run's: {sorted(changed)}"
