"""Variation on the real embedded model: paraphrases (with degenerate detection and one retry),
cross-temperature tasks and the long → short answer pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from a2c.llm.base import WrappedGenerator
from a2c.prompting.paraphrase import (
    DEFAULT_TECHNIQUES,
    clean_paraphrase,
    paraphrase_messages,
    paraphrase_problem,
    paraphrase_questions,
)
from a2c.prompting.prompts import load_template
from a2c.qa.variation import Answer, AnswerTask, answer, temperature_tasks

QUESTIONS = ["What happens if you swallow gum?", "Why do veins appear blue?"]


@dataclass
class Recording(WrappedGenerator):
    """The real generator, with a log of each generate call's requests."""

    calls: list[list] = field(default_factory=list)

    def generate(self, requests):
        self.calls.append(list(requests))
        return self.inner.generate(requests)


@pytest.mark.parametrize(("text", "problem"), [
    ("", "empty"), ("  ?! ", "empty"),
    ("what happens if you SWALLOW gum", "identical"),
    ("What occurs when gum is swallowed?\nAlso, is gum food?", "multi-line"),
    ("What occurs " + "and then what " * 12 + "?", "rambling"),
    ("What occurs when gum is swallowed?", None),
])
def test_paraphrase_problems(text, problem):
    assert paraphrase_problem("What happens if you swallow gum?", text) == problem


def test_clean_paraphrase_strips_labels_and_quotes():
    assert clean_paraphrase(' Rewritten question: "Is it safe?" ') == "Is it safe?"
    assert clean_paraphrase("Paraphrase: Is it safe?") == "Is it safe?"
    assert clean_paraphrase("Is it 'safe'?") == "Is it 'safe'?"


def test_paraphrase_messages_shots_one_per_technique():
    msgs = paraphrase_messages(load_template("paraphrase"), DEFAULT_TECHNIQUES, 2, "Is the sea salty?")
    assert msgs[0].role == "system" and all(t.name in msgs[0].content for t in DEFAULT_TECHNIQUES)
    shots = msgs[1:-1]
    assert len(shots) == 2 * len(DEFAULT_TECHNIQUES)
    assert [m.role for m in shots] == ["user", "assistant"] * len(DEFAULT_TECHNIQUES)
    assert shots[1].content == DEFAULT_TECHNIQUES[0].example_paraphrase
    assert "Technique 3 (sentence structure)" in msgs[-1].content and "Is the sea salty?" in msgs[-1].content
    assert [t.name for t in DEFAULT_TECHNIQUES] == ["synonyms", "word forms", "sentence structure",
                                                     "conjunctions"]


@pytest.mark.slow
def test_paraphrase_questions_one_batched_call(smollm2):
    rec = Recording(smollm2)
    out = paraphrase_questions(rec, QUESTIONS, DEFAULT_TECHNIQUES[:2], seed=1, max_tokens=24)
    assert [[p.technique for p in row] for row in out] == [["synonyms", "word forms"]] * 2
    assert len(rec.calls[0]) == 4 and len(rec.calls) <= 2  # all questions at once, at most one retry batch
    for question, row in zip(QUESTIONS, out, strict=True):
        for p in row:
            assert p.ok == (p.problem is None) == (paraphrase_problem(question, p.text) is None)


@pytest.mark.slow
def test_degenerate_paraphrases_are_retried_once_then_flagged(smollm2, tmp_path):
    echo = tmp_path / "echo.yaml"
    echo.write_text(
        "fields: [techniques, number, technique, question]\n"
        "system: 'Copy the text exactly. Techniques: {techniques}'\n"
        "user: 'Copy ({number}, {technique}): {question}'\n"
    )
    rec = Recording(smollm2)
    out = paraphrase_questions(rec, QUESTIONS[:1], DEFAULT_TECHNIQUES[:2], seed=0, temperature=0.0,
                               max_tokens=16, template=str(echo))
    first = [clean_paraphrase(g.text) for g in smollm2.generate(rec.calls[0])]  # greedy: as in the run
    bad_first = [i for i, t in enumerate(first) if paraphrase_problem(QUESTIONS[0], t)]
    assert bad_first, f"the echo prompt should give degenerate paraphrases, got {first}"
    assert len(rec.calls) == 2 and len(rec.calls[1]) == len(bad_first)
    assert all(r.seed != rec.calls[0][i].seed for r, i in zip(rec.calls[1], bad_first, strict=True))
    for p in out[0]:
        assert p.ok == (paraphrase_problem(QUESTIONS[0], p.text) is None)


def test_temperature_tasks_seeds_are_per_question_temperature_sample():
    tasks = temperature_tasks(QUESTIONS, [0.0, 1.0], top_p=0.9, samples=2, seed=3)
    assert len(tasks) == 8 and tasks[0].question == QUESTIONS[0] and tasks[4].question == QUESTIONS[1]
    assert [t.temperature for t in tasks[:4]] == [0.0, 0.0, 1.0, 1.0] and all(t.top_p == 0.9 for t in tasks)
    assert len({t.seed for t in tasks}) == 8
    more = temperature_tasks(["Another question?", *QUESTIONS], [0.0, 1.0, 1.5], top_p=0.9, samples=3, seed=3)
    old = {(t.question, t.temperature, t.seed) for t in tasks}
    assert old <= {(t.question, t.temperature, t.seed) for t in more}  # old samples keep their seeds
    assert temperature_tasks(QUESTIONS, [1.0], seed=4)[0].seed != temperature_tasks(QUESTIONS, [1.0])[0].seed
    with pytest.raises(ValueError, match="samples"):
        temperature_tasks(QUESTIONS, [1.0], samples=0)
    with pytest.raises(ValueError, match="temperatures"):
        temperature_tasks(QUESTIONS, [])
    with pytest.raises(ValueError, match="technique"):
        paraphrase_questions(None, QUESTIONS, ())  # type: ignore[arg-type]


@pytest.mark.slow
def test_answer_long_then_short_in_two_batched_calls(smollm2):
    rec = Recording(smollm2)
    tasks = [AnswerTask("What is the capital of France?"), AnswerTask("What is the capital of France?", 1.0,
                                                                      0.9, 11)]
    out = answer(rec, tasks, long_max_tokens=24, short_max_tokens=8)
    assert len(rec.calls) == 2 and [len(c) for c in rec.calls] == [2, 2]
    assert rec.calls[0][1].temperature == 1.0 and rec.calls[0][1].seed == 11 and rec.calls[0][1].top_p == 0.9
    assert all(r.temperature == 0.0 for r in rec.calls[1])  # extraction is greedy
    assert all(isinstance(a, Answer) and a.long and "\n" not in a.short for a in out)
    assert out[0].long in rec.calls[1][0].messages[-1].content  # long answer = the short prompt's context
