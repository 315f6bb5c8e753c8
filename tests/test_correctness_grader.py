"""The `llm` correctness rule: a generator grades each answer against the gold answers.

Against a grading server on 127.0.0.1 that replies by rule (Yes when the graded answer contains an
accepted one, a shrug for answers with "??", else No), so every label is known: one request per distinct
(question, answer), unparsed replies counted and left ungraded (NaN, never incorrect), a rerun answered
from the request cache. Then the embedded SmolLM2 grading for real, and a whole run under the rule with a
scripted model whose unreadable grader replies leave sets ungraded, counted in the summary and report.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import yaml

import a2c
from a2c.llm import GeneratorConfig, build_generator
from a2c.qa.correctness import CorrectnessError, GoldAnswers, rule_options, score_correctness
from a2c.qa.correctness.accuracy import accuracy_columns
from a2c.qa.correctness.grader import UngradedAnswerWarning
from a2c.qa.data import QARecord


def _grade(body: dict) -> str:
    """The rule the server grades by, read from the prompt's last user turn."""
    user = body["messages"][-1]["content"]
    fields = dict(line.split(": ", 1) for line in user.splitlines() if ": " in line)
    answer, accepted = fields["Answer to grade"], fields["Accepted answers"].split("; ")
    if "??" in answer:
        return "Hard to say."
    return "Yes" if any(a.casefold() in answer.casefold() for a in accepted) else "No"


class GradingServer:
    """OpenAI chat/completions on a free 127.0.0.1 port, replying by `_grade`, counting the requests."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "grader", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                self._send({"choices": [{"message": {"role": "assistant", "content": _grade(body)},
                                         "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 50, "completion_tokens": 1}})

            def _send(self, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def grading_server():
    server = GradingServer()
    yield server
    server.stop()


EIFFEL = GoldAnswers(("Paris", "in Paris, France"), question="Where is the Eiffel Tower?")
SPIDER = GoldAnswers(("eight", "8 legs"), question="How many legs does a spider have?")
PAIRS = [("It is in Paris.", EIFFEL), ("Rome", EIFFEL), ("It is in Paris.", EIFFEL), ("Paris??", EIFFEL),
         ("Spiders have eight legs.", SPIDER), ("six", SPIDER)]


def test_the_grader_labels_by_its_replies_counts_unparsed_ones_and_reruns_from_the_cache(grading_server,
                                                                                        tmp_path):
    config = {"backend": "openai", "model": "grader", "base_urls": [grading_server.url],
              "cache": str(tmp_path / "cache.sqlite")}
    with pytest.warns(UngradedAnswerWarning, match="1 of 5 grader replies had neither Yes nor No"):
        found = score_correctness("llm", PAIRS, generator=config)
    assert found.scores[[0, 1, 2, 4, 5]].tolist() == [1.0, 0.0, 1.0, 1.0, 0.0]
    assert math.isnan(found.scores[3]) and found.unparsed == 1
    assert found.graded.tolist() == [True, True, True, False, True, True]
    np.testing.assert_array_equal(found.labels, [1.0, 0.0, 1.0, np.nan, 1.0, 0.0])  # NaN: not "incorrect"
    # one request per distinct (question, answer); the prompt is ours, with the question and gold answers
    assert len(grading_server.requests) == 5
    user = grading_server.requests[0]["messages"][-1]["content"]
    assert "Question: Where is the Eiffel Tower?" in user
    assert "Accepted answers: Paris; in Paris, France" in user
    assert grading_server.requests[0]["temperature"] == 0.0
    # the same grading again: every reply from the request cache, no request reaches the server
    generator = build_generator(GeneratorConfig(**config))
    before = replace(generator.stats)
    with pytest.warns(UngradedAnswerWarning):
        again = score_correctness("llm", PAIRS, generator=generator)
    np.testing.assert_array_equal(again.scores, found.scores)
    assert len(grading_server.requests) == 5
    assert (generator.stats.cached - before.cached, generator.stats.generated - before.generated) == (5, 0)


def test_a_run_passes_its_own_generator_and_ungraded_answers_have_nan_columns(grading_server, tmp_path):
    generator = build_generator(GeneratorConfig(backend="openai", model="grader",
                                                base_urls=[grading_server.url], cache=None))
    record = QARecord("eiffel", "Where is the Eiffel Tower?", None, ("Paris",))
    with pytest.warns(UngradedAnswerWarning):
        columns = accuracy_columns("llm", {"threshold": 0.5}, [], ["Paris", "Rome", "??"], [record] * 3,
                                   run_generator=lambda: generator)
    llm = columns["llm"]
    assert llm.max_true[:2].tolist() == [1.0, 0.0] and llm.diff[:2].tolist() == [0.5, -0.5]
    assert llm.acc[:2].tolist() == [1.0, 0.0] and np.isnan([llm.max_true[2], llm.diff[2], llm.acc[2]]).all()


def test_bad_grader_options_and_inputs_name_the_field(tmp_path):
    with pytest.raises(CorrectnessError, match="template 'rank' takes fields"):
        rule_options("llm", {"template": "rank"})
    with pytest.raises(CorrectnessError, match="no shipped prompt template"):
        rule_options("llm", {"template": "no_such_template"})
    with pytest.raises(CorrectnessError, match=r"generator.*backend"):
        rule_options("llm", {"generator": {"backend": "nonesuch"}})
    with pytest.raises(CorrectnessError, match="max_tokens"):
        rule_options("llm", {"max_tokens": 0})
    with pytest.raises(CorrectnessError, match="temperature: unknown option"):
        rule_options("llm", {"temperature": 0.5})
    with pytest.raises(CorrectnessError, match="pair 0 has no question text"):
        score_correctness("llm", [("Paris", ["Paris"])],
                          generator={"backend": "scripted", "model": "scripted"})


def test_the_embedded_model_grades_from_its_yes_no_probabilities(smollm2):
    pairs = [("Paris", EIFFEL), ("The Eiffel Tower is in Berlin.", EIFFEL), ("Eight legs.", SPIDER)]
    found = score_correctness("llm", pairs, generator=smollm2)
    # the backend returns log-probabilities, so every answer gets P(Yes) / (P(Yes) + P(No)), none unparsed
    assert found.unparsed == 0 and ((found.scores > 0) & (found.scores < 1)).all()
    assert found.correct.tolist() == (found.scores > 0.5).tolist()


def test_a_gold_only_run_under_the_grader_counts_its_ungraded_sets(tmp_path):
    data = tmp_path / "gold.jsonl"
    rows = [{"text": "Where is the Eiffel Tower?", "right": "Paris"},
            {"text": "How many legs does a spider have?", "right": "eight"},
            {"text": "What colour is the sky?", "right": "blue"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    # the scripted model answers and grades: "maybe" is a reply the grader cannot read
    config = {"name": "graded", "output": str(tmp_path / "run"),
              "dataset": {"name": "file", "path": str(data),
                          "columns": {"question": "text", "correct": "right"}},
              "generator": {"backend": "scripted", "model": "scripted:Yes|No|maybe|Paris",
                            "cache": str(tmp_path / "cache.sqlite")},
              "judges": ["exact", "rouge1"], "accuracy": {"rule": "llm"}, "ask_to_choose": {"enabled": False}}
    (tmp_path / "graded.yaml").write_text(yaml.safe_dump(config))
    with pytest.warns(UngradedAnswerWarning):
        result = a2c.run_experiment(tmp_path / "graded.yaml", progress=False)
    summary = json.loads((result.folder / "summary.json").read_text())
    assert summary["similarities"] == ["llm"]
    ungraded = [r for r in result.metrics if r.n_accurate is None and r.accuracy]
    assert summary["counts"]["ungraded_sets"] == len(ungraded) > 0
    assert all(v is None for r in ungraded for v in r.accuracy.values())
    graded = [r for r in result.metrics if r.n_accurate is not None and r.n]
    assert graded and all(r.accuracy["llm"] is not None and 0 <= r.accuracy["llm"].acc <= 1 for r in graded)
    report = (result.folder / "report.md").read_text()
    assert f"| sets left ungraded (grader replies unread) | {len(ungraded)} |" in report.replace("  ", " ")
