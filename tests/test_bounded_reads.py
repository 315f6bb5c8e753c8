"""User-named files are read only when they are regular files within the read limit: /dev/zero, a FIFO, a
socket or a folder named as a dataset, config or answers file is one error line, never a process that fills
memory or waits forever; the limit is `A2C_MAX_FILE_BYTES`."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2c.cli import main
from a2c.common.errors import A2CError
from a2c.common.files import DEFAULT_READ_LIMIT, READ_LIMIT_ENV, read_bytes, read_limit, read_text
from a2c.data.errors import DatasetError
from a2c.data.tables import read_table
from a2c.qa.data.truthfulqa import load_truthfulqa_csv
from a2c.run.config_file import load_config
from a2c.settings.config import ConfigError

ROOT = Path(__file__).resolve().parents[1]
TQA_HEADER = "Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers\n"
TQA_ROW = "Adversarial,Misc,Where is the Eiffel Tower?,In Paris,In Paris,In Rome\n"


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail, instead of hanging, when the body blocks (SIGALRM interrupts a blocking open or read)."""
    def _expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "questions.csv"
    os.mkfifo(path)
    return path


def test_dev_zero_is_refused_without_reading():
    with deadline(10), pytest.raises(DatasetError) as refused:
        read_text(Path("/dev/zero"), DatasetError, what="CSV file")
    assert one_line(refused.value) == "/dev/zero: is a character device; the CSV file must be a regular file"


def test_a_fifo_is_refused_without_blocking(fifo):
    with deadline(10), pytest.raises(DatasetError, match=r"questions\.csv: is a FIFO \(named pipe\); the CSV "
                                                         "file must be a regular file$"):
        read_text(fifo, DatasetError, what="CSV file")


def test_a_socket_and_a_folder_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a socket's path must be short: bind a relative one
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("answers.jsonl")
        with deadline(10), pytest.raises(A2CError, match=r"^answers\.jsonl: is a socket; the answers file"):
            read_bytes(Path("answers.jsonl"), A2CError, what="answers file")
    with pytest.raises(A2CError) as refused:
        read_bytes(tmp_path, A2CError, what="config file")
    assert one_line(refused.value) == f"{tmp_path}: is a folder, not a config file"


def test_a_file_over_the_limit_is_refused_and_the_setting_raises_it(tmp_path, monkeypatch):
    path = tmp_path / "q.csv"
    path.write_text("id,question\n" + "x,why?\n" * 200, encoding="utf-8")  # 1,412 bytes
    monkeypatch.setenv(READ_LIMIT_ENV, "1k")
    with pytest.raises(DatasetError) as refused:
        read_table(path)
    assert one_line(refused.value) == (
        f"{path}: the CSV file is 1.38 KiB, more than the 1 KiB a2c reads from one file; set "
        f"{READ_LIMIT_ENV} (e.g. {READ_LIMIT_ENV}=4GiB) to raise the limit")
    monkeypatch.setenv(READ_LIMIT_ENV, "1412")  # exactly the file's size is allowed
    assert len(read_table(path).rows) == 200
    monkeypatch.setenv(READ_LIMIT_ENV, "2KiB")
    assert len(read_table(path).rows) == 200


def test_a_file_whose_size_lies_is_cut_at_the_limit(monkeypatch):
    """/proc files say they hold 0 bytes; the read stops one byte past the limit, whatever the size says."""
    status = Path("/proc/self/status")
    if not status.is_file():
        pytest.skip("no /proc on this system")
    assert status.stat().st_size == 0
    monkeypatch.setenv(READ_LIMIT_ENV, "64")
    with pytest.raises(A2CError, match=r"status: the file holds more than the 64 bytes a2c reads"):
        read_bytes(status, A2CError)
    monkeypatch.delenv(READ_LIMIT_ENV)
    assert b"Name:" in read_bytes(status, A2CError)


@pytest.mark.parametrize(("given", "limit"), [
    ("", DEFAULT_READ_LIMIT), ("1073741824", 1 << 30), ("500M", 500 << 20), ("2GiB", 2 << 30),
    (" 3 kb ", 3 << 10)])
def test_the_limit_setting_takes_bytes_or_a_unit(monkeypatch, given, limit):
    monkeypatch.setenv(READ_LIMIT_ENV, given)
    assert read_limit() == limit


@pytest.mark.parametrize("given", ["lots", "0", "-5", "1.5G", "3 parsecs"])
def test_a_limit_that_is_no_size_is_refused_naming_the_variable(monkeypatch, tmp_path, given):
    monkeypatch.setenv(READ_LIMIT_ENV, given)
    (tmp_path / "c.yaml").write_text("name: x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{READ_LIMIT_ENV}=.* is no size"):
        load_config(tmp_path / "c.yaml")


def test_a_parquet_dataset_goes_through_the_same_reader(tmp_path, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    path = tmp_path / "q.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "question": ["Why?", "How?"]}), path)
    assert [r.values["question"] for r in read_table(path).rows] == ["Why?", "How?"]
    monkeypatch.setenv(READ_LIMIT_ENV, "100")
    with pytest.raises(DatasetError, match=r"q\.parquet: the parquet file is .* more than the 100 bytes"):
        read_table(path)
    piped = tmp_path / "piped.parquet"
    os.mkfifo(piped)
    with deadline(10), pytest.raises(DatasetError, match=r"piped\.parquet: is a FIFO"):
        read_table(piped)


def _config(tmp_path: Path, dataset: Path) -> Path:
    config = tmp_path / "c.yaml"
    config.write_text(f"name: bounded\ndataset:\n  name: file\n  path: {dataset}\n"
                      "generator: {backend: scripted, model: echo}\n", encoding="utf-8")
    return config


def test_the_config_loader_refuses_a_dataset_that_is_a_device_or_a_fifo(tmp_path, fifo):
    with pytest.raises(DatasetError, match=r"^/dev/zero: unknown data file type"):
        load_config(_config(tmp_path, Path("/dev/zero")))  # no suffix: refused before any read
    with deadline(10), pytest.raises(DatasetError, match=r"questions\.csv: is a FIFO"):
        load_config(_config(tmp_path, fifo))


def test_a2c_run_on_a_fifo_dataset_is_one_line_and_exit_2(tmp_path, fifo):
    """The real command in its own process, so a regression that blocks fails at the timeout."""
    done = subprocess.run([sys.executable, "-m", "a2c", "run", str(_config(tmp_path, fifo)), "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (f"a2c: error: {fifo}: is a FIFO (named pipe); the CSV file must be a "
                                   "regular file")
    assert not (tmp_path / "runs").exists()


def test_a2c_score_refuses_dev_zero_and_a_fifo(tmp_path, fifo, capsys):
    questions = tmp_path / "TruthfulQA.csv"
    questions.write_text(TQA_HEADER + TQA_ROW, encoding="utf-8")
    with deadline(20):
        code = main(["score", "/dev/zero", "--path", str(questions), "-s", "rouge1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == ("a2c: error: /dev/zero: is a character device; the answers file must be a regular "
                           "file")
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "truthfulqa-0", "answer": "In Paris"}\n', encoding="utf-8")
    with deadline(20):
        code = main(["score", str(answers), "--path", str(fifo), "-s", "rouge1"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{fifo}: is a FIFO (named pipe); the TruthfulQA CSV must be a regular file" in err


def test_the_truthfulqa_loader_refuses_dev_zero(tmp_path):
    with deadline(10), pytest.raises(DatasetError, match=r"^/dev/zero: is a character device"):
        load_truthfulqa_csv("/dev/zero")
    good = tmp_path / "TruthfulQA.csv"
    good.write_text(TQA_HEADER + TQA_ROW, encoding="utf-8")
    assert [r.question for r in load_truthfulqa_csv(good)] == ["Where is the Eiffel Tower?"]


def test_the_inspect_task_refuses_csv_dev_zero():
    pytest.importorskip("inspect_ai", reason="inspect-ai not installed (make setup)")
    from a2c.inspect import truthfulqa_a2c

    with deadline(20), pytest.raises(DatasetError) as refused:
        truthfulqa_a2c(csv="/dev/zero")
    assert one_line(refused.value).startswith("/dev/zero: is a character device; the TruthfulQA CSV must")


def test_the_lm_eval_task_refuses_a_fifo(fifo):
    pytest.importorskip("lm_eval", reason="lm-eval not installed (the lmeval extra)")
    sys.path.insert(0, str(ROOT / "a2c" / "lmeval" / "tasks"))  # lm-eval loads the file by path
    try:
        import truthfulqa_local
    finally:
        sys.path.pop(0)
    with deadline(20), pytest.raises(DatasetError, match=r"questions\.csv: is a FIFO"):
        truthfulqa_local.load_csv(csv=str(fifo))


def test_dataset_path_flag_names_a_fifo_as_such(tmp_path, fifo, capsys):
    good = tmp_path / "good.csv"
    good.write_text("id,question\ntower,Where is the Eiffel Tower?\n", encoding="utf-8")
    config = _config(tmp_path, good)
    with deadline(20):
        code = main(["run", str(config), "--dataset-path", str(fifo), "--no-progress"])
    assert code == 2
    assert capsys.readouterr().err.strip() == (f"a2c: error: {fifo}: is a FIFO (named pipe); the CSV file "
                                               "must be a regular file")
