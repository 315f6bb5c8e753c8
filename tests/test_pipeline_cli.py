"""`a2c probe` on the embedded model and on a real served model, and its one-line error for a server
that is not there."""

from __future__ import annotations

import subprocess
import sys

import pytest

from a2c.models.embedded import DEFAULT_MODEL
from tests.conftest import free_port

PROBE_PARTS = ("paraphrases and answers:", "embedding agreement matrix (paraphrases)",
               "embedding agreement matrix (temperatures)", "Cons_sem =", "entropy =", "Ask-to-Choose:",
               "A2C answer:")


def _rank_replies(out: str) -> int:
    section = out.split("Ask-to-Choose:")[1]
    return sum(line.strip().startswith(("c", "t")) and "reply" in line for line in section.splitlines())


def _expected_rank_replies(out: str, temperatures: int) -> int:
    """One rank reply per paraphrase context (4) when any paraphrase passed its checks and was answered
    (with none, Y_c is empty: nothing to choose from), and one per temperature."""
    answers = out.split("paraphrases and answers:")[1].split("agreement matrix")[0]
    answered = any(line.strip().startswith("c") and "asked:" in line for line in answers.splitlines())
    return (4 if answered else 0) + temperatures


def test_probe_reports_an_unreachable_server_in_one_line(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"  # bound then released: nothing listens there
    command = [sys.executable, "-m", "a2c", "probe", "Why is the sky blue?", "--base-url", url,
               "--model", "m"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert f"cannot reach the server at {url}" in result.stderr
    assert "Traceback" not in result.stderr


def test_probe_shows_what_the_run_keeps_in_milliseconds(capsys):
    """On the scripted backend the first and third paraphrases fail their checks (the stand-in model's only
    question is "Which one?") and, as in `a2c run`, get no answer; their contexts still get rank prompts."""
    from a2c.cli import main

    code = main(["probe", "Where is the Eiffel Tower?", "--backend", "scripted", "--model",
                 "scripted:1|2|Paris|Rome\nMadrid|Which one?", "--judge", "exact", "--no-cache"])
    out = capsys.readouterr().out
    assert code == 0
    for part in PROBE_PARTS[3:]:
        assert part in out, part
    answers = out.split("paraphrases and answers:")[1].split("exact agreement matrix")[0]
    labels = [line.split()[0] for line in answers.splitlines() if "asked:" in line]
    assert labels == ["c2", "c4", "t1", "t2", "t3", "t4"]
    assert "(2 paraphrases failed their checks and are left out, as in `a2c run`:)" in answers
    # the two left out, as the model wrote them (the script's replies), each with its problem
    shown = [line.strip() for line in answers.splitlines() if line.strip().startswith("✗")]
    assert len(shown) == 2 and all(line.endswith("]") and " [" in line for line in shown), shown
    matrix = out.split("exact agreement matrix (paraphrases):")[1].splitlines()[1]
    assert matrix.split() == ["c2", "c4"]
    assert _rank_replies(out) == 8


@pytest.mark.slow
def test_probe_on_the_embedded_model_prints_every_part(tmp_path):
    command = [sys.executable, "-m", "a2c", "probe", "How many legs does a spider have?",
               "--backend", "transformers", "--temperatures", "0.5", "1.0"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    for part in PROBE_PARTS:
        assert part in out, part
    assert _rank_replies(out) == _expected_rank_replies(out, 2)


@pytest.mark.slow
def test_probe_against_a_served_model(llama_server, tmp_path):
    """The same probe through the OpenAI-compatible API of a real llama.cpp server on 127.0.0.1."""
    command = [sys.executable, "-m", "a2c", "probe", "What colour is a ripe banana?",
               "--base-url", llama_server.base_url, "--model", DEFAULT_MODEL, "--temperatures", "0.5", "1.0",
               "--no-cache"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    for part in PROBE_PARTS:
        assert part in result.stdout, part
    # (measured: SmolLM2 through llama.cpp writes no usable paraphrase of this question, "Does a ripe banana
    # have any colour?" being yes/no and the others repeating it, so only the temperatures are ranked)
    assert _rank_replies(result.stdout) == _expected_rank_replies(result.stdout, 2)
    assert not (tmp_path / ".a2c-cache").exists()  # --no-cache: nothing written


@pytest.mark.parametrize(("flags", "message"), [
    (["--temperatures", "nan"], "--temperatures: must be a finite number >= 0, got 'nan'"),
    (["--timeout", "0"], "--timeout: must be a finite number > 0, got '0'"),
    (["--retries", "-1"], "--retries: must be a whole number >= 0, got '-1'"),
])
def test_probe_refuses_bad_numbers_as_usage_errors(flags, message, capsys):
    from a2c.cli import build_parser

    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["probe", "Q?", *flags])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_probe_passes_timeout_and_retries_to_the_generator():
    from a2c.cli import build_parser
    from a2c.cli.probe import _generator_config

    args = build_parser().parse_args(["probe", "Q?", "--base-url", "http://127.0.0.1:9/v1",
                                      "--timeout", "2.5", "--retries", "0"])
    config = _generator_config(args)
    assert (config.backend, config.timeout, config.max_retries) == ("openai", 2.5, 0)


@pytest.mark.parametrize("question", ["", "   \n"])
def test_probe_refuses_an_empty_question_before_any_model_loads(question, tmp_path):
    result = subprocess.run([sys.executable, "-m", "a2c", "probe", question, "--backend", "transformers",
                             "--model", "no/such-model"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2
    assert "a2c: error: the question is empty" in result.stderr and "Traceback" not in result.stderr
