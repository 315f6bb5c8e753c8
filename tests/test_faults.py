"""Faults of the machine or of a damaged file end like a user error: one line naming the file, a hint,
exit 2, never "unexpected error" (exit 1). Each case runs the real `a2c` command in-process on the
scripted backend (milliseconds); the full disk and the read-only folder are simulated by making the
write fail with that errno (this machine's tests run as root, whom no permission stops, and no tiny
file system is at hand)."""

from __future__ import annotations

import errno
import json
import os
import re
import sqlite3
from pathlib import Path

import pytest
import torch
import yaml

from a2c.cli import main
from a2c.judges.base import CACHE_NAMESPACE as JUDGE_NAMESPACE
from a2c.judges.lexical import LexicalOptions, Rouge1Judge
from a2c.system.cache import Cache

SCRIPT = "scripted:1|2|Paris|Rome\nMadrid"
QUESTIONS = [{"id": "eiffel", "text": "Where is the Eiffel Tower?", "right": "Paris", "wrong": "Rome"},
             {"id": "spider", "text": "How many legs does a spider have?", "right": "Eight", "wrong": "Six"}]


def _config(tmp: Path, data: Path | None = None) -> Path:
    if data is None:
        data = tmp / "questions.jsonl"
        data.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    config = {"name": "faults", "output": str(tmp / "run"),
              "dataset": {"name": "file", "path": str(data),
                          "columns": {"question": "text", "correct": "right", "incorrect": "wrong"}},
              "generator": {"backend": "scripted", "model": SCRIPT, "cache": str(tmp / "cache.sqlite")},
              "judges": ["exact", "rouge1"], "accuracy": {"similarities": ["rouge1"]}}
    path = tmp / "faults.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _run(*argv: str) -> int:
    return main([*argv, "--no-progress"] if argv[0] == "run" else list(argv))


def _error(capsys: pytest.CaptureFixture[str]) -> tuple[str, str | None]:
    # `a2c report` rescores with progress bars (the selection stage's, per method) before a write fails
    lines = [line for line in capsys.readouterr().err.splitlines() if line and "%|" not in line]
    assert lines and lines[0].startswith("a2c: error: "), lines
    assert len(lines) <= 2 and "unexpected" not in lines[0] and "Traceback" not in "\n".join(lines)
    hint = lines[1].removeprefix("hint: ") if len(lines) > 1 else None
    return lines[0].removeprefix("a2c: error: "), hint


def _failing_replace(code: int):
    def replace(src: str, dst: str) -> None:
        raise OSError(code, os.strerror(code))

    return replace


def test_a_full_disk_names_the_file_and_says_what_to_do(tmp_path, capsys, monkeypatch):
    config = _config(tmp_path)
    monkeypatch.setattr("a2c.run.store.os.replace", _failing_replace(errno.ENOSPC))
    assert _run("run", str(config)) == 2
    message, hint = _error(capsys)
    assert message.startswith(str(tmp_path / "run")) and message.endswith(": no space left on the device")
    assert hint is not None and hint.startswith("free some space and rerun")


@pytest.mark.parametrize(("code", "said"), [(errno.EROFS, "the file system is read-only"),
                                            (errno.EACCES, "permission denied")])
def test_a_read_only_run_folder_on_report(tmp_path, capsys, monkeypatch, code, said):
    config = _config(tmp_path)
    assert _run("run", str(config)) == 0
    capsys.readouterr()
    monkeypatch.setattr("a2c.run.store.os.replace", _failing_replace(code))
    assert _run("report", str(tmp_path / "run")) == 2
    message, hint = _error(capsys)
    assert message.startswith(str(tmp_path / "run")) and message.endswith(f": {said}")
    assert hint is not None and "--output DIR" in hint


@pytest.mark.parametrize(("value", "said"), [
    ('{"text": "Par', "the generation entry"),  # a torn row: not JSON
    ("[1, 2]", "a generation entry is not a stored answer"),  # JSON, but not an answer
    ('{"text": 7, "finish_reason": null}', "a generation entry is not a stored answer"),
])
def test_corrupt_cache_rows_say_how_to_recover(tmp_path, capsys, value, said):
    config = _config(tmp_path)
    assert _run("run", str(config)) == 0
    capsys.readouterr()
    cache = tmp_path / "cache.sqlite"
    with sqlite3.connect(cache) as conn:
        conn.execute("UPDATE entries SET value = ?", (value,))
    assert _run("run", str(config), "--output", str(tmp_path / "again")) == 2
    message, hint = _error(capsys)
    assert message.startswith(f"{cache}: ") and said in message
    assert message.endswith("the cache file is damaged")
    assert hint == (f"delete {cache} (it holds only cached model answers and judge scores: a rerun asks for "
                    "them again), or run with --no-cache")
    # the recovery the hint names works
    assert _run("run", str(config), "--output", str(tmp_path / "again"), "--no-cache") == 0


def test_a_cache_file_that_is_not_sqlite(tmp_path, capsys):
    config = _config(tmp_path)
    (tmp_path / "cache.sqlite").write_bytes(b"these are not the bytes of a database, " * 200)
    assert _run("run", str(config)) == 2
    message, hint = _error(capsys)
    assert message == f"cannot open cache {tmp_path / 'cache.sqlite'}: file is not a database"
    assert hint is not None and hint.startswith(f"delete {tmp_path / 'cache.sqlite'}")


def test_a_damaged_judge_score(tmp_path):
    class CachedRouge(Rouge1Judge):
        cacheable = True

    cache = Cache(tmp_path / "judge.sqlite")
    judge = CachedRouge(LexicalOptions(cache=cache))
    judge.matrix("q", ["a cat", "a dog", "the cat"])
    with sqlite3.connect(cache.path) as conn:
        conn.execute("UPDATE entries SET value = '\"0.5\"' WHERE namespace = ?", (JUDGE_NAMESPACE,))
    with pytest.raises(Exception, match=r"judge\.sqlite: a judge entry is not a score \('0\.5'\): the cache"):
        judge.matrix("q", ["a cat", "a dog", "the cat"])


def test_human_labels_with_nan(tmp_path, capsys):
    config = _config(tmp_path)
    assert _run("run", str(config)) == 0
    capsys.readouterr()
    labels = tmp_path / "labels.csv"
    labels.write_text("id,source,phase,ann1,ann2\neiffel,paraphrase,before,1,0\n"
                      "spider,paraphrase,before,nan,1\n")
    assert _run("report", str(tmp_path / "run"), "--human-labels", str(labels)) == 2
    message, hint = _error(capsys)
    assert message == f"{labels}: the label 'nan' of set spider, paraphrase, before is not a finite number"
    assert hint is not None and "leave out a set nobody labelled" in hint
    labels.write_bytes("id,source,phase,ann1,ann2\nst\xe9,paraphrase,before,1,0\n".encode("latin-1"))
    assert _run("report", str(tmp_path / "run"), "--human-labels", str(labels)) == 2
    message, _ = _error(capsys)
    assert message.startswith(f"{labels}:2: not UTF-8 text")


def test_a_deeply_nested_json_line(tmp_path, capsys):
    data = tmp_path / "questions.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    data.write_text(json.dumps(QUESTIONS[0]) + "\n" + '{"id": "x", "text": ' + deep + "}\n")
    assert _run("run", str(_config(tmp_path, data))) == 2
    message, _ = _error(capsys)
    assert message == f"{data}:2: JSON nested deeper than 64 levels"
    assert not (tmp_path / "run").exists()


def test_memory_error_is_exit_2_with_a_hint(capsys, monkeypatch):
    def exhausted(*args: object, **kwargs: object) -> float:
        raise MemoryError

    monkeypatch.setattr("a2c.metrics.contrast.relative_consistency", exhausted)
    assert main(["metrics", "rc", "--bundles", "10", "--correct", "10", "--consistent", "2"]) == 2
    message, hint = _error(capsys)
    assert message == "out of memory" and hint is not None and "more memory" in hint


def _gpu_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> Path:
    """A run config on the transformers backend (batch_size 7) whose model is the scripted one, failing as
    a GPU does when a batch does not fit: the real CLI, no model, no GPU."""
    import a2c.llm
    from a2c.llm.config import TransformersConfig
    from a2c.llm.scripted import ScriptedBackend

    class OutOfMemory(ScriptedBackend):
        def run(self, jobs: object, emit: object) -> None:
            raise exc

    monkeypatch.setattr(TransformersConfig, "build", lambda config: OutOfMemory(SCRIPT))
    a2c.llm._build.cache_clear()
    config = yaml.safe_load(_config(tmp_path).read_text())
    config["generator"] = {"backend": "transformers", "device": "cpu", "batch_size": 7,
                           "cache": str(tmp_path / "cache.sqlite")}
    path = tmp_path / "gpu.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("exc", [
    torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
                           "79.19 GiB\nof which 1.2 GiB is free."),
    RuntimeError("CUDA error: out of memory"),  # what vLLM's workers and older torch raise
], ids=["torch", "plain"])
def test_a_gpu_out_of_memory_names_the_batch_size_to_lower(tmp_path, capsys, monkeypatch, exc):
    config = _gpu_run(tmp_path, monkeypatch, exc)
    assert _run("run", str(config)) == 2
    message, hint = _error(capsys)
    first = str(exc).splitlines()[0]
    assert message == f"the GPU ran out of memory ({first})"
    assert hint is not None and hint.startswith("lower `generator.batch_size` (now 7) (or a model judge's "
                                                "`batch_size`) and rerun; finished stages")


def test_a_gpu_out_of_memory_outside_a_run_still_names_the_batch_size(capsys, monkeypatch):
    def exhausted(*args: object, **kwargs: object) -> float:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")

    monkeypatch.setattr("a2c.metrics.contrast.relative_consistency", exhausted)
    assert main(["metrics", "rc", "--bundles", "10", "--correct", "10", "--consistent", "2"]) == 2
    message, hint = _error(capsys)
    assert message.startswith("the GPU ran out of memory") and hint is not None
    assert hint.startswith("lower `generator.batch_size` (or a model judge's `batch_size`)")


def test_an_unexpected_error_names_where_in_a2c_it_was_raised(tmp_path, capsys, monkeypatch):
    """The library's own message is often no help ("Expected all tensors to be on the same device"): the
    line names the last a2c frame, `--debug` gives the whole traceback."""
    config = _gpu_run(tmp_path, monkeypatch, RuntimeError("Expected all tensors to be on the same device, "
                                                          "but found at least two devices, cuda:0 and cpu!"))
    assert _run("run", str(config)) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"a2c: unexpected error: RuntimeError: Expected all tensors to be on the same "
                        r"device, but found at least two devices, cuda:0 and cpu! \(raised at "
                        r"a2c/llm/sampling\.py:\d+; rerun with --debug for the traceback\)", line), line
    assert _run("run", str(config), "--debug") == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in run" in err
    assert err.splitlines()[-1].startswith("a2c: unexpected error: RuntimeError: Expected all tensors")


def test_other_os_errors_stay_a2c_s_own(capsys, monkeypatch):
    def broken(*args: object, **kwargs: object) -> float:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr("a2c.metrics.contrast.relative_consistency", broken)
    assert main(["metrics", "rc", "--bundles", "10", "--correct", "10", "--consistent", "2"]) == 1
    assert "a2c: unexpected error: OSError" in capsys.readouterr().err


def test_a_judge_model_that_is_nowhere_fails_before_any_stage(tmp_path, tiny_nli_dir, monkeypatch):
    """`a2c run` checks every judge and similarity model before the first stage: a hub id that is neither
    a local folder nor in the HF cache, with the hub kept out, is one line and exit 2, with no run folder
    made; a local folder of a real model passes the check."""
    from a2c.cli import main
    from a2c.common.errors import A2CError
    from a2c.qa.task import check_models
    from a2c.run.config_file import parse_config

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = tmp_path / "exp.yaml"
    config.write_text("name: missing-judge\nlimit: 1\ngenerator: {backend: scripted, cache: null}\n"
                      "judges: [{name: entail, model: nobody/no-such-nli-model}]\n"
                      "accuracy: {similarities: [rouge1]}\noutput: run\n")
    assert main(["run", str(config), "--no-progress"]) == 2
    assert not (tmp_path / "run").exists()
    missing = r"cannot load judge model 'nobody/no-such-nli-model': .*HF_HUB_OFFLINE"
    with pytest.raises(A2CError, match=missing):
        check_models(parse_config(config.read_text()))
    local = parse_config(f"name: x\njudges: [{{name: entail, model: '{tiny_nli_dir}'}}, ner, embedding]\n"
                         "accuracy: {similarities: [rouge1, embedding]}\n")
    check_models(local)  # a local folder, the embedded MiniLM and spaCy's NER package are there
