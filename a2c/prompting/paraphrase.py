"""In-context paraphrases (SPEC §1): techniques, the few-shot paraphrase prompt and the checks.

Task-neutral: the QA wing paraphrases questions, the classification wing hypotheses. Requests for all
inputs go in one `generate` call, so the backend can batch; paraphrases that come back degenerate get
exactly one batched retry with another seed and are flagged (`ok=False`) if still bad, never dropped.
Besides the form checks, a caller may give a meaning check: a batched score of (question, paraphrase)
pairs and a threshold, below which a paraphrase fails as "changed meaning" (it asks another question, so
its answer says nothing about consistency) and is retried like the others.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from a2c.common.seeds import stable_seed
from a2c.common.text import normalize
from a2c.llm.base import GenerationRequest, Generator, Message
from a2c.prompting.paraphrase_checks import question_problem
from a2c.prompting.prompts import PromptTemplate, load_template


@dataclass(frozen=True)
class Technique:
    """A paraphrasing technique with one worked example (shown to the auxiliary model as a shot)."""

    name: str
    instruction: str
    example_question: str
    example_paraphrase: str


# The paper's four techniques; wording and examples are ours.
DEFAULT_TECHNIQUES: tuple[Technique, ...] = (
    Technique("synonyms", "Replace some words with words of the same meaning.",
              "What happens if you eat watermelon seeds?",
              "What occurs if you swallow watermelon pips?"),
    Technique("word forms", "Change the form or part of speech of some words, e.g. a verb into a noun.",
              "Why do cats purr when they are happy?",
              "What is the reason for the purring of cats when they feel happiness?"),
    Technique("sentence structure", "Reorder or restructure the sentence, e.g. move a clause or switch "
              "between active and passive voice.",
              "Who invented the telephone in 1876?",
              "In 1876, the telephone was invented by whom?"),
    Technique("conjunctions", "Add, remove or swap linking words such as 'and', 'but', 'if', 'when'.",
              "If you leave milk out overnight, does it go bad?",
              "Does milk go bad when you leave it out overnight?"),
)


@dataclass(frozen=True)
class Paraphrase:
    text: str
    technique: str
    ok: bool = True
    problem: str | None = None  # why it was flagged: see `paraphrase_problem`
    first_problem: str | None = None  # why the first draw failed (None: it passed, no retry)
    meaning: float | None = None  # the meaning check's score of this text (None: not checked)


CHANGED_MEANING = "changed meaning"
# scores (question, paraphrase) pairs in one batch, 1 = same meaning
MeaningScorer = Callable[[Sequence[str], Sequence[str]], Sequence[float]]


@dataclass(frozen=True)
class MeaningCheck:
    """A paraphrase scoring below `threshold` against its question fails as "changed meaning"."""

    score: MeaningScorer
    threshold: float

    def problems(self, questions: Sequence[str], texts: Sequence[str]) -> list[tuple[str | None, float]]:
        """(problem, score) per pair, all pairs scored in one call."""
        scores = list(self.score(questions, texts)) if texts else []
        if len(scores) != len(texts):
            raise ValueError(f"the meaning check scored {len(scores)} of {len(texts)} paraphrases")
        return [(CHANGED_MEANING if float(v) < self.threshold else None, float(v)) for v in scores]


def _technique_listing(techniques: Sequence[Technique]) -> str:
    return "\n".join(f"{i}. {t.name}: {t.instruction}" for i, t in enumerate(techniques, 1))


def paraphrase_messages(template: PromptTemplate, techniques: Sequence[Technique], index: int,
                        question: str) -> tuple[Message, ...]:
    """Chat turns asking for technique `index`: system, one worked shot per technique, then the question."""
    listing = _technique_listing(techniques)

    def render(number: int, q: str) -> tuple[Message, ...]:
        return template.messages(techniques=listing, number=number, technique=techniques[number - 1].name,
                                 question=q)

    shots: list[Message] = []
    for number, technique in enumerate(techniques, 1):
        shots += [render(number, technique.example_question)[-1],
                  Message("assistant", technique.example_paraphrase)]
    final = render(index + 1, question)
    return (*final[:-1], *shots, final[-1])


_LABEL = re.compile(r"^\s*(rewritten question|paraphrase|question)\s*:\s*", re.IGNORECASE)


def clean_paraphrase(raw: str) -> str:
    """Strip a leading label and surrounding quotes the model may add; keep the line structure."""
    text = _LABEL.sub("", raw.strip())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def paraphrase_problem(question: str, text: str, extra_words: int = 12,
                       references: Sequence[str] = ()) -> str | None:
    """Why a paraphrase is unusable, or None: empty, same as the question, several lines, far too long
    (over twice the question's words plus `extra_words`), then what `a2c.prompting.paraphrase_checks` finds:
    not a question, states one of `references` (the record's answers, correct or incorrect), changed question
    type."""
    if not normalize(text):
        return "empty"
    if normalize(text) == normalize(question):
        return "identical"
    if sum(1 for line in text.splitlines() if line.strip()) > 1:
        return "multi-line"
    if len(text.split()) > 2 * len(question.split()) + extra_words:
        return "rambling"
    return question_problem(question, text, references)


def paraphrase_questions(aux: Generator, questions: Sequence[str],
                         techniques: Sequence[Technique] = DEFAULT_TECHNIQUES, *, seed: int = 0,
                         temperature: float = 0.7, top_p: float = 0.95, max_tokens: int = 64,
                         template: str = "paraphrase",
                         references: Sequence[Sequence[str]] | None = None,
                         meaning: MeaningCheck | None = None) -> list[list[Paraphrase]]:
    """One paraphrase per technique for every question: one batched call, one batched retry of bad ones.

    Args:
        aux: the model that paraphrases.
        questions: the questions.
        techniques: one paraphrase per technique and question.
        seed: the run's seed; each request's seed derives from it, the question and the technique.
        temperature: the paraphrases' sampling temperature (a retry samples at 0.7 at least).
        top_p: nucleus sampling's share.
        max_tokens: each paraphrase's token budget.
        template: the paraphrase prompt's template.
        references: each question's reference answers (empty without): a paraphrase stating one fails.
        meaning: the meaning check, run on the paraphrases that pass the form checks (one batched score
            per pass); None: form checks only.

    Returns:
        Per question, its paraphrases in technique order, each flagged `ok` or with its problem.
    """
    if not techniques:
        raise ValueError("paraphrase_questions needs at least one technique")
    refs = [tuple(r) for r in references] if references is not None else [()] * len(questions)
    if len(refs) != len(questions):
        raise ValueError(f"{len(refs)} reference lists for {len(questions)} questions")
    tmpl = load_template(template)
    slots = [(q, k) for q in range(len(questions)) for k in range(len(techniques))]
    requests = [GenerationRequest(messages=paraphrase_messages(tmpl, techniques, k, questions[q]),
                                  temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                                  seed=stable_seed(seed, questions[q], techniques[k].name, bits=31))
                for q, k in slots]
    texts = [clean_paraphrase(g.text) for g in aux.generate(requests)]
    problems = [paraphrase_problem(questions[q], t, references=refs[q])
                for (q, _), t in zip(slots, texts, strict=True)]
    scores: list[float | None] = [None] * len(slots)
    _check_meaning(meaning, [questions[q] for q, _ in slots], texts, problems, scores,
                   range(len(slots)))
    first = list(problems)

    retry = [s for s, p in enumerate(problems) if p is not None]
    if retry:
        # another seed, and some randomness even if the first pass was greedy
        again = [replace(requests[s], seed=stable_seed(seed, "retry", requests[s].seed, bits=31),
                         temperature=max(temperature, 0.7)) for s in retry]
        redrawn = [clean_paraphrase(gen.text) for gen in aux.generate(again)]
        problems_again = [paraphrase_problem(questions[slots[s][0]], text, references=refs[slots[s][0]])
                          for s, text in zip(retry, redrawn, strict=True)]
        scores_again: list[float | None] = [None] * len(retry)
        _check_meaning(meaning, [questions[slots[s][0]] for s in retry], redrawn, problems_again,
                       scores_again, range(len(retry)))
        for k, s in enumerate(retry):
            if problems_again[k] is None or problems[s] == "empty":
                texts[s], problems[s], scores[s] = redrawn[k], problems_again[k], scores_again[k]

    out: list[list[Paraphrase]] = [[] for _ in questions]
    for s, ((q, k), text, problem) in enumerate(zip(slots, texts, problems, strict=True)):
        out[q].append(Paraphrase(text, techniques[k].name, problem is None, problem, first[s], scores[s]))
    return out


def _check_meaning(meaning: MeaningCheck | None, questions: Sequence[str], texts: Sequence[str],
                   problems: list[str | None], scores: list[float | None], slots: range) -> None:
    """Score the slots that passed the form checks and flag those below the threshold, in place."""
    if meaning is None:
        return
    passed = [s for s in slots if problems[s] is None]
    found = meaning.problems([questions[s] for s in passed], [texts[s] for s in passed])
    for s, (problem, score) in zip(passed, found, strict=True):
        problems[s], scores[s] = problem, score
