"""A run's results do not change when its bookkeeping does: 200 synthetic questions on the scripted stand-in
model under the paper's protocol (tests/scale_runs.py) give exactly the files a2c gave before the stages
were made to stream (issue 36), and 1,000 give those a2c gave before the summary read columns and the
bootstrap kept its draws (slow: a minute or more of CPU). The digests were computed with the earlier code;
a change to the files a run writes must be deliberate and update them here."""

from __future__ import annotations

import csv

import pytest

from a2c.run.pipeline import run_experiment
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

# computed with the code of e3ccf44 (before columns, chunked matrices and kept bootstrap draws)
EXPECTED_1000 = {
    "paraphrases.jsonl": "bff837bfd838734b3f96bbc75d2c813b53b913ad57eb14f59616a780e39ac48c",
    "generations.jsonl": "af36144a223446473635651eb884bb6cbbc13418adc0a15364e81615c0abd6d0",
    "choices.jsonl": "0680dd5e1e36405c5584465d7ff8446c00c0221a821627f0cbf347305c0d6ddb",
    "selections.jsonl": "cd094a513325a7d958d929a0cf0a67612d95a50ac71e441231c08d655d4c5df7",
    "metrics.jsonl": "1a2d2bc012a383584c0191ff15f19590ce15773e9eefe07ccebe88fb1827b66c",
    "uncertainty.jsonl": "0003e5fc0009bb2c3f5c45c3d8f1e4bec22e413a6d8a1040b14abbb0664b4b93",
    "selection_scores.jsonl": "4fa33e6c2035726a2c0facd284bd2f6d153b7c16cd9c8e1a4c0fe2ae718aa2eb",
    "summary.json": "782403417bdf112a3d26ca90e8141ab7518cc4011685be2fc0dcbb3b6d58d5bd",
    "matrices_before.npz": "66e9df05be05f586749697fc6735ec40aed07dae52aa88a45cd88dd0efc5fcee",
    "matrices_after.npz": "164bd39d151cca1a3a2c3e89be012d45a831daac4b9b296d3bda86dc7616a614",
    "report.md": "f0242a19c4c649ac77335c080946f0754819174f55e90d60d3fd1098fe3bbab0",
    "table_before_after.csv": "e9e7a03cababa0aa13986206e63f76e902a27d7878705b08d7069256cd2a9bd3",
    "table_accurate_answers.csv": "cbd6ead67a90fa13acfbab205fb40b95e4c98733bf44ca3979e1036061992256",
    "counts.csv": "0d747e9bf127b6c390db301768bddbf1862897a351e2711f36152afec47eb310",
    "table_signal.csv": "d16274c3da9c57e3392b936f9ebdd38268d3340a68f8f13c11ddb9f558729412",
    "table_selection.csv": "6a0d6adede2c6c18a26ba1bb7d6443961206b5f4c158b9b75964cd4c7f23cd54",
    "table_answer_or_decline.csv": "fdea9d6c562d51af4429d383e0d23ba4225e26a671f3c7b48ba5c8bf93a51292",
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


@pytest.mark.slow
def test_a_1000_question_run_gives_the_stored_results(tmp_path):
    config = scale_config(tmp_path, 1000)
    run_experiment(config, progress=False)
    changed = sorted(name for name, digest in result_digests(config.run_dir).items()
                     if EXPECTED_1000[name] != digest)
    assert not changed, f"result files differ from the stored run's: {changed}"
