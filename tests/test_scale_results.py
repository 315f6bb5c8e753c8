"""A run's results do not change when its bookkeeping does: 200 synthetic questions on the scripted stand-in
model under the paper's protocol (tests/scale_runs.py) give exactly the files a2c gave before the stages
were made to stream (issue 36), and 1,000 give those a2c gave before the summary read columns and the
bootstrap kept its draws (slow: a minute or more of CPU). The digests were computed with the earlier code;
a change to the files a run writes must be deliberate and update them here.

Updated once, deliberately, for the shorter, block-aligned rank prompt (issue 36: fewer computed prompt
tokens): the stand-in answers by a hash of the prompt, so the rank replies and everything after them
moved (paraphrases, answers and the before-A2C matrices did not). The bookkeeping changes were checked
against the earlier digests before that prompt change was merged. Updated again for the names of the three
don't-know shares (of choices, of rank replies, of picks): report.md and the two tables' headings and
notes only, every figure as before (checked by diffing the 200-question run's files against those of the
code before the rename)."""

from __future__ import annotations

import csv

import pytest
from threadpoolctl import threadpool_info

from a2c.metrics.bootstrap import defined_pairs
from a2c.run.pipeline import run_experiment
from tests.scale_runs import result_digests, scale_config

EXPECTED = {
    "paraphrases.jsonl": "43575a208213f18cd5b02e252022a6279d51e70e6d0b81728dd7ca31aad6d908",
    "generations.jsonl": "013eb4fab4ccb1b3e4e736e7e0b1b42c09b654d1e3504bf5dac057050f8cfb79",
    "choices.jsonl": "e4062bae30516a2a548747e00b5e6e758727cc11f1abe145f596ea008df761eb",
    "selections.jsonl": "944e1e4cb2297257ee958007b9316f772ba13d191da6d24df754cfaf5fd0108e",
    "metrics.jsonl": "ef5c16677af6ff7debca1763c061e525775a8277d27b4bd6a643eae915e5e8d0",
    "uncertainty.jsonl": "f316f9dfcfa9a8f343c55d811c96fec3dbb123fa2502ec1c2c3fcaab02dfd90d",
    "selection_scores.jsonl": "931d0c72ba4abc28a368e01dd2709cd20bee7d5b09e129cf3e7046b62baf1b64",
    "summary.json": "a71ea9e8b783731a8647cbec56714d668a29759d3f9cadc0e38a8df3da022b71",
    "matrices_before.npz": "a16b32cebc4f1ee4657130c1b6aa9c5293893ce3840800c87db482a78cdd3204",
    "matrices_after.npz": "aef1f1d7db84d3b3e0aadaeb26a5ec87989d82f4c71a26a05c3d5943e223d52f",
    "report.md": "2abd0bc398a5be2185a5d44cf7d4e27802cf6cf16848c1febaa74632de69880a",
    "table_before_after.csv": "34edf782c44fa0159ece1ebd07c9e4be9f5b936b0f4d65c43b6b54d0a9adbf97",
    "table_accurate_answers.csv": "23d9b611e44e80f0350aaf09fcb35f507b823f8c5fcaa450addd41c5b499f53b",
    "counts.csv": "2ec61de1611057b2b3a9411356eba38a77a733ef198ea36224cc582a44329754",
    "table_signal.csv": "2bbc09534a0ea8bebf0d27451092a5d1735c38df01f5f08659162f70ace05cf1",
    "table_selection.csv": "d73dcb302c42aa41c18feea7dc68ef9abc1c5d693fb218527a9c6618c5090aa6",
    "table_answer_or_decline.csv": "953b4a30e864877a9bd7fa11270c3406ddbbd3258dd81e08881e89cd3615f008",
}

# the bookkeeping changes were checked against e3ccf44's digests; these are after the rank prompt change
EXPECTED_1000 = {
    "paraphrases.jsonl": "bff837bfd838734b3f96bbc75d2c813b53b913ad57eb14f59616a780e39ac48c",
    "generations.jsonl": "af36144a223446473635651eb884bb6cbbc13418adc0a15364e81615c0abd6d0",
    "choices.jsonl": "94398c8c6219835ce28a0e2e1c63851508cf328b9122fdff6f4892041b644ee1",
    "selections.jsonl": "e82a12af2f1b8bab0f7ca282ffa1bf24594970bea4d0d4c09ea4a018826f484c",
    "metrics.jsonl": "a1380f0e4e622ec89d108d958a4b736cec644d92570882e97d653c13a471cda4",
    "uncertainty.jsonl": "90d24f57dfca91d3163361ad51a9a5f2558cf157474bbd5a35153e1ae622bb66",
    "selection_scores.jsonl": "5ec801b3e6eb2ffdb33c2c17fb93ffcfd8e75fe18e3a89994572741a854982e9",
    "summary.json": "fac8e882fe406f36b84f1c70a2bd2353ffc03f971fbae96fcac0f93c8bd1dc3a",
    "matrices_before.npz": "66e9df05be05f586749697fc6735ec40aed07dae52aa88a45cd88dd0efc5fcee",
    "matrices_after.npz": "7702b685765b062a7e2fc3ccd90c51a5717e9cb578ee85e829d7c9283536ff2c",
    "report.md": "d92d4f121c03b89a9c300990baa4ae1df4c0b573ce80fe443a03c1bc8282848a",
    "table_before_after.csv": "ce4ead6fcb8c792eaca91fc88c99e458486e6569f6188bbbdef5831b4614e262",
    "table_accurate_answers.csv": "68a103bd538b2d5e74dcd2fc8483d99fe049dfbc09306c3596dcc46e7e136e2f",
    "counts.csv": "e6510260d09d023fa43d4ca584bb228889b2ee4a8bf51be0c483188ad309e087",
    "table_signal.csv": "8e587f031919bf72a41d3b0fe311aae44a47e5d877af5e5b3478d9d122ef947c",
    "table_selection.csv": "a117595f0bad85aebd86cbbaba562739ba5d39774497dfefc466aa1d7ebfe6f7",
    "table_answer_or_decline.csv": "1a2494b7b389c321d5e824047e8cb630e0fbb70b77f382ed9710b65c48c15426",
}


@pytest.fixture(autouse=True)
def _the_digests_blas_kernels():
    """The digests hold OpenBLAS's AVX2 kernels' last bits (tests/conftest.py pins them): with others they
    would differ in a few floats of 1e-16, so that is said instead of a list of changed files."""
    cores = {info.get("architecture") for info in threadpool_info() if info.get("internal_api") == "openblas"}
    if cores and cores != {"Haswell"}:
        pytest.fail(f"numpy's OpenBLAS runs its {', '.join(sorted(map(str, cores)))} kernels, and the stored "
                    "digests were made with its Haswell (AVX2) ones: run with OPENBLAS_CORETYPE=Haswell")


def test_a_200_question_run_gives_the_stored_results(tmp_path, monkeypatch):
    import a2c.qa.summary as summary

    sizes: list[int] = []  # pairs resampled by each paired difference of the summary, in computing order
    real = summary.paired

    def counting(before, after, seed):
        sizes.append(defined_pairs(before, after))
        return real(before, after, seed)

    monkeypatch.setattr(summary, "paired", counting)
    config = scale_config(tmp_path, 200)
    result = run_experiment(config, progress=False)
    # the before → after cells and the selection table in one pass by size: a size they share is drawn
    # once (apart, each table went up the sizes on its own)
    assert len(sizes) > 20 and len(set(sizes)) > 3 and sizes == sorted(sizes)
    # a few of the numbers behind the digests, so a failure shows what moved
    with (config.run_dir / "table_selection.csv").open(encoding="utf-8") as handle:
        table = {(r["method"], r["selection"]): r for r in csv.DictReader(handle)}
    assert table[("cross-temperature", "A2C")]["R1-A"] == "0.595"
    assert table[("in-context paraphrases", "Medoid")]["picked"] == "154 / 200"
    assert len(result.metrics) == 200 * 2 * 2  # questions × sources × phases
    changed = {name: digest for name, digest in result_digests(config.run_dir).items()
               if EXPECTED[name] != digest}
    assert not changed, f"result files differ from the stored run's: {sorted(changed)}"

    # resumed with another chunk size, the stages after the answers read a generations file whose rows
    # of a question lie in chunks of 128 (a chunk's paraphrase answers, then its samples) 7 questions at a
    # time: the same results
    for marker in (config.run_dir / "stages").glob("*.json"):
        if marker.stem not in ("variation", "answers"):
            marker.unlink()
    resumed = run_experiment(config.model_copy(update={"chunk_size": 7}), progress=False)
    assert resumed.stages["answers"].skipped and not resumed.stages["metrics"].skipped
    changed = {name: digest for name, digest in result_digests(config.run_dir).items()
               if EXPECTED[name] != digest}
    assert not changed, f"result files differ after resuming in chunks of 7: {sorted(changed)}"


@pytest.mark.slow
def test_a_1000_question_run_gives_the_stored_results(tmp_path):
    config = scale_config(tmp_path, 1000)
    run_experiment(config, progress=False)
    changed = sorted(name for name, digest in result_digests(config.run_dir).items()
                     if EXPECTED_1000[name] != digest)
    assert not changed, f"result files differ from the stored run's: {changed}"
