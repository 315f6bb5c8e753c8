"""Sources of variation of a QA run (SPEC §1): cross-temperature samples and long → short answers.

(The paraphrases are `a2c.prompting.paraphrase`.) Every call builds its requests for all questions at once and
makes one `generate` call, so the backend can batch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from a2c.common.seeds import stable_seed
from a2c.llm.base import GenerationRequest, Generator
from a2c.prompting.prompts import load_template, with_context


@dataclass(frozen=True)
class AnswerTask:
    question: str
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    context: str = ""  # shown before the question in the long-answer prompt (a passage, a story)


@dataclass(frozen=True)
class Answer:
    long: str
    short: str
    token_logprobs: tuple[float, ...] | None = None  # the long answer's, where asked for and given


def temperature_tasks(questions: Sequence[str], temperatures: Sequence[float], *, top_p: float = 0.95,
                      samples: int = 1, seed: int = 0, context: str = "") -> list[AnswerTask]:
    """Tasks question-major, then temperature, then sample; each seed depends only on
    (seed, question, temperature, sample index), so adding questions or temperatures changes no old sample.
    A temperature listed more than once continues its sample count (`[0.0, 1.0, 1.0]`: one greedy answer
    and samples 0 and 1 at 1.0), so its samples differ instead of repeating one seed."""
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    if not temperatures:
        raise ValueError("temperatures must not be empty")
    tasks = []
    for q in questions:
        drawn: Counter[float] = Counter()
        for t in map(float, temperatures):
            for _ in range(samples):
                tasks.append(AnswerTask(q, t, top_p, stable_seed(seed, q, t, drawn[t], bits=31), context))
                drawn[t] += 1
    return tasks


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.strip().splitlines() if line.strip()), "")


def answer(generator: Generator, tasks: Sequence[AnswerTask], *, long_max_tokens: int = 96,
           short_max_tokens: int = 16, long_template: str = "long_answer",
           short_template: str = "answer", logprobs: int | None = None) -> list[Answer]:
    """Long answers (one batched call, each task's own sampling), then short answers extracted greedily
    from them with the few-shot answer prompt (a second batched call). A short answer is the reply's
    first line, so its generation stops at the first newline instead of running on (a reply that opens
    with a newline — none in 3,154 SmolLM2 replies — gives an empty short answer, which the judges handle).
    A task's context (a passage, a story) is shown before its question in the long-answer prompt only: the
    short answer is read off the long one. `logprobs` (k, 0 for the chosen tokens only) asks for the long
    answers' token log-probabilities: each Answer keeps the chosen tokens' (None where the backend gave
    none); the request is the same call, so asking costs no extra one."""
    long_tmpl, short_tmpl = load_template(long_template), load_template(short_template)
    generated = generator.generate([
        GenerationRequest(messages=with_context(long_tmpl.messages(question=t.question), t.context),
                          temperature=t.temperature, top_p=t.top_p, seed=t.seed, max_tokens=long_max_tokens,
                          logprobs=logprobs) for t in tasks])
    longs = [g.text.strip() for g in generated]
    chosen = [None if logprobs is None or g.completions[0].token_logprobs is None
              else tuple(g.completions[0].token_logprobs) for g in generated]
    shorts = [_first_line(g.text) for g in generator.generate([
        GenerationRequest(messages=short_tmpl.messages(context=long, question=t.question), temperature=0.0,
                          max_tokens=short_max_tokens, stop=("\n",))
        for t, long in zip(tasks, longs, strict=True)])]
    return [Answer(long, short, lp) for long, short, lp in zip(longs, shorts, chosen, strict=True)]
