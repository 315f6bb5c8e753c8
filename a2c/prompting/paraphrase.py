"""In-context paraphrases (SPEC §1): techniques, the few-shot paraphrase prompt and the checks.

Task-neutral: the QA wing paraphrases questions, the classification wing hypotheses. Requests for all
inputs go in one `generate` call, so the backend can batch; paraphrases that come back degenerate get
exactly one batched retry with another seed and are flagged (`ok=False`) if still bad, never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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
                         references: Sequence[Sequence[str]] | None = None) -> list[list[Paraphrase]]:
    """One paraphrase per technique for every question: one batched call, one batched retry of bad ones.
    `references` holds each question's reference answers (empty without): a paraphrase stating one fails."""
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

    retry = [s for s, p in enumerate(problems) if p is not None]
    if retry:
        # another seed, and some randomness even if the first pass was greedy
        again = [replace(requests[s], seed=stable_seed(seed, "retry", requests[s].seed, bits=31),
                         temperature=max(temperature, 0.7)) for s in retry]
        for s, gen in zip(retry, aux.generate(again), strict=True):
            text = clean_paraphrase(gen.text)
            q = slots[s][0]
            problem = paraphrase_problem(questions[q], text, references=refs[q])
            if problem is None or problems[s] == "empty":
                texts[s], problems[s] = text, problem

    out: list[list[Paraphrase]] = [[] for _ in questions]
    for (q, k), text, problem in zip(slots, texts, problems, strict=True):
        out[q].append(Paraphrase(text, techniques[k].name, problem is None, problem))
    return out
