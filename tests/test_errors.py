"""One error path: every user mistake ends in one `a2c: error:` line naming the file, line or key, exit 2,
no traceback, before anything ran; a2c's own bugs exit 1 in one line; Ctrl-C exits 130.

The corpus runs the real `a2c` in a subprocess from an empty folder (so "nothing ran" means the folder holds
exactly the files the case wrote). The property tests call the loaders in-process: whatever bytes a config
or a CSV holds, the result is a valid config/records or the loader's own error, never another exception.
"""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2c.cli import main
from a2c.qa.data import DatasetError, load_records, load_truthfulqa_csv
from a2c.qa.data.truthfulqa import CSV_COLUMNS
from a2c.run.config_file import load_config
from a2c.settings.config import ConfigError
from tests.conftest import interruptible

HEADER = ",".join(CSV_COLUMNS)
GOOD_ROW = "Adversarial,Science,Why is the sky blue?,Rayleigh scattering,Scattering,It reflects the sea"
LATIN_ROW = "A,B,Qu'est-ce qu'un caf\xe9?,Un caf\xe9,Un caf\xe9,Un th\xe9"  # written as Latin-1
SLOW = 60.0  # seconds: a failure must come long before any model work or hub retries would end


def _dataset_config(csv_name: str, extra: str = "") -> bytes:
    return f"name: x\ndataset:\n  name: truthfulqa\n  path: {csv_name}\n{extra}".encode()


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    files: dict[str, bytes | None] = field(default_factory=dict)  # None: an empty folder
    expected: tuple[str, ...] = ()  # each must be on the error line
    hint: str | None = None  # text of the `hint:` line, when there must be one


CORPUS = [
    Case("binary config", ("run", "exp.yaml"), {"exp.yaml": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"},
         ("exp.yaml:1: not UTF-8 text (byte 0x89 at offset 0)",), "save it as UTF-8"),
    Case("latin-1 config", ("run", "exp.yaml"), {"exp.yaml": b"name: x\n# caf\xe9\n"},
         ("exp.yaml:2: not UTF-8 text (byte 0xe9 at offset 13)",)),
    Case("config is a folder", ("run", "exp.yaml"), {"exp.yaml": None}, ("exp.yaml: is a folder",)),
    Case("config not found", ("run", "nothere.yaml"), {}, ("config file not found: nothere.yaml",)),
    Case("malformed yaml", ("run", "exp.yaml"), {"exp.yaml": b"name: x\nvariation: [0.5,\n"},
         ("exp.yaml:3: not valid YAML",)),
    Case("unknown key", ("run", "exp.yaml"), {"exp.yaml": b"name: x\nvariation:\n  temperatur: 3\n"},
         ("exp.yaml:3: variation.temperatur: unknown key",)),
    Case("misspelt nested key", ("run", "exp.yaml"),
         {"exp.yaml": b"name: x\naccuracy:\n  similarites: [rouge1]\n"},
         ("exp.yaml:3: accuracy.similarites: unknown key (did you mean 'similarities'?)",)),
    Case("unknown encoding", ("run", "exp.yaml"),
         {"exp.yaml": _dataset_config("tqa.csv", "  encoding: latin-9x\n"), "tqa.csv": b"x"},
         ("exp.yaml:5: dataset.encoding", "latin-9x")),
    Case("latin-1 csv", ("run", "exp.yaml"),
         {"exp.yaml": _dataset_config("tqa.csv"),
          "tqa.csv": f"{HEADER}\n{GOOD_ROW}\n{LATIN_ROW}\n".encode("latin-1")},
         ("tqa.csv:3: not UTF-8 text (byte 0xe9",), "set `dataset.encoding`"),
    Case("csv missing column", ("run", "exp.yaml"),
         {"exp.yaml": _dataset_config("tqa.csv"), "tqa.csv": b"Type,Category,Question\nA,B,Why?\n"},
         ("tqa.csv:1: not a TruthfulQA CSV", "'Best Answer'", "'Incorrect Answers'"),
         "must name the columns"),
    Case("row with missing fields", ("run", "exp.yaml"),
         {"exp.yaml": _dataset_config("tqa.csv"), "tqa.csv": f"{HEADER}\n{GOOD_ROW}\n{GOOD_ROW}\nA,B,Why?\n"
          .encode()},
         ("tqa.csv:4: the row has 3 cells, the header 6",)),
    Case("empty question", ("run", "exp.yaml"),
         {"exp.yaml": _dataset_config("tqa.csv"),
          "tqa.csv": f"{HEADER}\n{GOOD_ROW}\nA,B, ,Yes,Yes,No\n".encode()},
         ("tqa.csv:3: empty 'Question' cell",)),
    Case("invisible question", ("run", "exp.yaml"),  # zero-width spaces and an NBSP: nothing to ask
         {"exp.yaml": _dataset_config("tqa.csv"),
          "tqa.csv": f"{HEADER}\n{GOOD_ROW}\nA,B,\u200b\u200b\u00a0,Yes,Yes,No\n".encode()},
         ("tqa.csv:3: empty 'Question' cell", "invisible characters alone count as empty")),
    Case("unterminated quote", ("run", "exp.yaml"),  # the open quote would swallow rows 2 and 3
         {"exp.yaml": _dataset_config("tqa.csv"),
          "tqa.csv": f'{HEADER}\nA,B,"Why?,Yes,Yes,No\n{GOOD_ROW}\n{GOOD_ROW}\n'.encode()},
         ("tqa.csv:2: not valid CSV: unexpected end of data (a quote opened on this line is never closed)",)),
    Case("own csv invisible question", ("run", "exp.yaml"),
         {"exp.yaml": b"name: x\ndataset: {name: file, path: q.csv}\n",
          "q.csv": "question\nWhy?\n\u200b\t\u00a0\n".encode()},
         ("q.csv:3: empty question (column 'question', only invisible characters)",)),
    Case("own jsonl lone surrogate", ("run", "exp.yaml"),
         {"exp.yaml": b"name: x\ndataset: {name: file, path: q.jsonl}\n",
          "q.jsonl": b'{"question": "Why?"}\n{"question": "a\\ud800b"}\n'},
         ("q.jsonl:2: question: a lone UTF-16 surrogate",)),
    Case("own jsonl nested too deep", ("run", "exp.yaml"),
         {"exp.yaml": b"name: x\ndataset: {name: file, path: q.jsonl}\n",
          "q.jsonl": b'{"question": "Why?", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"},
         ("q.jsonl:1: JSON nested deeper than 64 levels",)),
    Case("classification input of invisible characters", ("run", "exp.yaml"),
         {"exp.yaml": b"name: x\ntask: classification\ndataset:\n  path: d.jsonl\n"
                      b"  labels: [entailment, contradiction]\n",
          "d.jsonl": b'{"premise": "A cat sleeps.", "hypothesis": "\\u200b\\u2060", '
                     b'"label": "entailment"}\n'},
         ("d.jsonl:1: empty 'hypothesis' (column 'hypothesis', only invisible characters)",)),
    Case("probe invisible question", ("probe", "\u200b\u00a0\t"), {},
         ("the question is empty (or only invisible characters)",)),
    Case("probe --questions of invisible characters", ("probe", "--questions", "q.csv"),
         {"q.csv": "question\nWhy?\n\u200b\u00a0\n".encode()},
         ("q.csv:3: empty question (column 'question', only invisible characters)",)),
    Case("probe question not UTF-8", ("probe", "caf\udce9?"), {},  # byte 0xe9 (Latin-1 é) in the argument
         ("the question is not UTF-8 text",)),
    Case("header-only csv", ("run", "exp.yaml"),
         {"exp.yaml": _dataset_config("tqa.csv"), "tqa.csv": f"{HEADER}\n".encode()},
         ("tqa.csv: no questions",)),
    Case("csv not found", ("run", "exp.yaml"), {"exp.yaml": _dataset_config("missing.csv")},
         ("exp.yaml:4: dataset.path: no such file or folder: ", "missing.csv (read relative to the config's "
          "folder ")),
    Case("unknown generator model", ("probe", "Why?", "--backend", "transformers", "--model",
                                     "does-not-exist/nowhere"), {},
         ("cannot load generator model 'does-not-exist/nowhere'", "HF_HUB_OFFLINE",
          "hf download does-not-exist/nowhere")),
    # `output` is read from the config's folder: the message names it absolute
    Case("output is a file", ("run", "exp.yaml"), {"exp.yaml": b"name: x\noutput: taken\n", "taken": b"mine"},
         ("run folder /", "/taken: is a file, not a folder"), hint="set `output`"),
    Case("output inside a file", ("run", "exp.yaml", "--output", "taken/run"),
         {"exp.yaml": b"name: x\n", "taken": b"mine"},
         ("run folder taken/run: a part of the path is a file",)),
    Case("output on a read-only file system", ("run", "exp.yaml", "--output", "/sys/a2c-run"),
         {"exp.yaml": b"name: x\n"}, ("run folder /sys/a2c-run: cannot write there",)),
    Case("report on a missing folder", ("report", "runs/nothere"), {}, ("runs/nothere",)),
    Case("report on an empty folder", ("report", "runs/empty"), {"runs/empty": None}, ("runs/empty",)),
    Case("score: bad json line", ("score", "answers.jsonl"),
         {"answers.jsonl": b'{"id": "truthfulqa-0", "answer": "x"}\n{"id": truthfulqa-1}\n'},
         ("answers.jsonl:2: not valid JSON",)),
    Case("score: latin-1 answers", ("score", "answers.csv"),
         {"answers.csv": b"id,answer\ntruthfulqa-0,caf\xe9\n"}, ("answers.csv:2: not UTF-8 text",)),
    Case("score: csv row with a missing cell", ("score", "answers.csv"),
         {"answers.csv": b"id,question,answer\ntruthfulqa-0,Why?\n"},
         ("answers.csv:2: the row has 2 cells, the header 3",)),
    Case("score: unreadable option value", ("score", "answers.jsonl", "-s", "rouge1:use_stemmer=["),
         {"answers.jsonl": b'{"id": "truthfulqa-0", "answer": "x"}\n'}, ("-s 'rouge1:use_stemmer=['",)),
    Case("judge: latin-1 preset", ("judge", "--preset", "mine.yaml", "a", "b"),
         {"mine.yaml": b"judges:\n  - name: exact\n# \xe9\n"}, ("mine.yaml:3: not UTF-8 text",)),
]


def _write(root: Path, files: dict[str, bytes | None]) -> None:
    for name, data in files.items():
        path = root / name
        if data is None:
            path.mkdir(parents=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _a2c(args: list[str] | tuple[str, ...], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "A2C_DEBUG"}
    environ["HF_HUB_OFFLINE"] = "1"  # no case may wait on the network
    return subprocess.run([sys.executable, "-m", "a2c", *args], cwd=cwd, capture_output=True, text=True,
                          env={**environ, **env}, timeout=300, check=False)


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_bad_input_is_one_error_line_exit_2_before_anything_runs(case, tmp_path):
    _write(tmp_path, case.files)
    before = _tree(tmp_path)
    started = time.perf_counter()
    done = _a2c(case.argv, tmp_path)
    elapsed = time.perf_counter() - started
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("a2c: error: ")]
    assert len(errors) == 1, done.stderr
    for text in case.expected:
        assert text in errors[0], done.stderr
    hints = [line for line in done.stderr.splitlines() if line.startswith("hint: ")]
    if case.hint is not None:
        assert len(hints) == 1 and case.hint in hints[0], done.stderr
    assert done.stdout == ""
    assert _tree(tmp_path) == before  # no run folder, no request cache, no output
    assert elapsed < SLOW


def test_debug_shows_the_traceback_too(tmp_path):
    (tmp_path / "exp.yaml").write_bytes(b"name: caf\xe9\n")
    cases = ((["--debug", "run", "exp.yaml"], {}), (["run", "exp.yaml", "--debug"], {}),
             (["run", "exp.yaml"], {"A2C_DEBUG": "1"}))
    for args, env in cases:
        done = _a2c(args, tmp_path, **env)
        assert done.returncode == 2
        assert "Traceback" in done.stderr and "ConfigError" in done.stderr
        assert done.stderr.splitlines()[-2].startswith("a2c: error: exp.yaml:1: not UTF-8 text")


@pytest.mark.parametrize(("argv", "debug"), [
    (["metrics", "rc", "--bundles", "1", "--correct", "1", "--consistent", "1", "--debug"], True),
    (["--debug", "metrics", "rc", "--bundles", "1", "--correct", "1", "--consistent", "1"], True),
    (["metrics", "rc", "--bundles", "1", "--correct", "1", "--consistent", "1"], False),
    (["report", "runs/x", "--debug"], True),
])
def test_debug_is_accepted_after_any_subcommand(argv, debug):
    from a2c.cli import build_parser

    assert build_parser().parse_args(argv).debug is debug


def test_latin1_csv_loads_with_its_encoding_and_a_bom_is_read_as_utf8(tmp_path):
    latin = tmp_path / "latin.csv"
    latin.write_bytes(f"{HEADER}\n{LATIN_ROW}\n".encode("latin-1"))
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"name: x\ndataset:\n  name: truthfulqa\n  path: {latin}\n  encoding: latin-1\n")
    config = load_config(exp)
    records = load_records("truthfulqa", config.dataset.path, encoding=config.dataset.encoding)
    assert records[0].question == "Qu'est-ce qu'un café?" and records[0].incorrect == ("Un thé",)
    bom = tmp_path / "bom.csv"
    bom.write_bytes("\ufeff".encode() + f"{HEADER}\r\n{GOOD_ROW}\r\n\r\n".encode())
    assert [r.question for r in load_truthfulqa_csv(bom)] == ["Why is the sky blue?"]  # blank line skipped


# -- exits other than 2: a2c's own bugs, Ctrl-C, usage errors --------------------------------------------

RC_ARGS = ["metrics", "rc", "--bundles", "5", "--correct", "8", "--consistent", "3"]


def _raise(exc: BaseException):
    def handler(args: object) -> int:
        raise exc

    return handler


def test_an_unexpected_exception_is_one_line_exit_1_and_debug_shows_it(monkeypatch, capsys):
    import a2c.cli.metrics

    monkeypatch.setattr(a2c.cli.metrics, "_rc", _raise(RuntimeError("boom\nsecond line")))
    assert main(RC_ARGS) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == ["a2c: unexpected error: RuntimeError: boom second line "
                                "(rerun with --debug for the traceback)"]
    assert main(["--debug", *RC_ARGS]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("a2c: unexpected error: RuntimeError")


def test_keyboard_interrupt_is_one_line_exit_130(monkeypatch, capsys):
    import a2c.cli.metrics

    monkeypatch.setattr(a2c.cli.metrics, "_rc", _raise(KeyboardInterrupt()))
    assert main(RC_ARGS) == 130
    assert capsys.readouterr().err.splitlines() == ["a2c: interrupted"]


def test_a_real_ctrl_c_exits_130_with_one_line(tmp_path):
    script = textwrap.dedent(f"""
        import sys, time
        import a2c.cli.metrics
        from a2c.cli import main

        def wait(args):
            print("ready", flush=True)
            time.sleep(60)

        a2c.cli.metrics._rc = wait
        sys.exit(main({RC_ARGS!r}))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.splitlines() == ["a2c: interrupted"]


def test_usage_errors_stay_argparse_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["run"])
    assert info.value.code == 2
    assert "a2c run: error: the following arguments are required: config" in capsys.readouterr().err


def test_a_hint_is_printed_on_its_own_line(monkeypatch, capsys):
    import a2c.cli.metrics
    from a2c.common.errors import A2CError

    monkeypatch.setattr(a2c.cli.metrics, "_rc", _raise(A2CError("bad thing", hint="do this")))
    assert main(RC_ARGS) == 2
    assert capsys.readouterr().err.splitlines() == ["a2c: error: bad thing", "hint: do this"]


# -- property tests: clear error or valid result, never another exception ---------------------------------

KEYS = ["name", "seed", "limit", "dataset", "generator", "variation", "judges", "accuracy", "ask_to_choose",
        "output", "chunk_size", "temperatures", "path", "encoding", "backend", "model", "techniques", "top_p"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(allow_nan=True),
                    st.text(max_size=20), st.sampled_from(["truthfulqa", "quickstart", "embedding", "offline",
                                                           "latin-1", "x", "", "transformers", "synonyms"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4), max_leaves=12)
CONFIG_SHAPED = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6).map(
    lambda d: yaml.safe_dump(d, allow_unicode=True).encode())
CONFIG_BYTES = st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode), CONFIG_SHAPED)

# cells drawn to hit the CSV parser's edge cases: quotes, separators, line breaks, NULs, empty cells
CELLS = st.one_of(st.sampled_from(["", " ", "Why?", "Yes; No", ";", "a,b", '"', 'say "hi"', "x\ny", "\r"]),
                  st.text(max_size=12))
ROWS = st.lists(st.lists(CELLS, min_size=0, max_size=8), max_size=6)


def _csv_text(header: list[str], rows: list[list[str]]) -> str:
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


CSV_BYTES = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(str.encode),
    st.builds(_csv_text, st.one_of(st.just(list(CSV_COLUMNS)), st.permutations(CSV_COLUMNS),
                                   st.lists(st.sampled_from([*CSV_COLUMNS, "Source", ""]), max_size=8)),
              ROWS).map(str.encode),
    st.builds(lambda rows: f"{HEADER}\n".encode() + "\n".join(",".join(r) for r in rows).encode(), ROWS),
)

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(data=CONFIG_BYTES)
def test_any_config_file_loads_or_fails_with_a_config_error(tmp_path_factory, data):
    path = tmp_path_factory.getbasetemp() / "hypothesis-config.yaml"
    path.write_bytes(data)
    try:
        config = load_config(path)
    except (ConfigError, DatasetError) as exc:  # DatasetError: a generated dataset.path that is no CSV
        assert str(exc).strip()
    else:
        assert config.name


@PROPERTY
@given(data=CSV_BYTES)
def test_any_csv_file_loads_or_fails_with_a_dataset_error(tmp_path_factory, data):
    path = tmp_path_factory.getbasetemp() / "hypothesis-data.csv"
    path.write_bytes(data)
    try:
        records = load_truthfulqa_csv(path)
    except DatasetError as exc:
        assert str(exc).startswith(str(path))
    else:
        assert records
        for record in records:
            assert record.question and record.best_answer in record.correct and record.incorrect
