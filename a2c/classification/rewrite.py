"""Sentences the auxiliary LLM writes: paraphrases (paper 003) and negations (paper 001).

Paraphrases go through the QA task's machinery (`a2c.variation.paraphrase_questions`: one batched call,
one batched retry of degenerate replies, flagged never dropped) with a sentence template and sentence
techniques. Negations are one batched greedy call; a reply that is empty, unchanged or several lines is
flagged and its item left out of the negational test (counted in the report).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from a2c.common.text import normalize
from a2c.llm.base import GenerationRequest, Generator
from a2c.prompting.paraphrase import Paraphrase, Technique, paraphrase_problem, paraphrase_questions
from a2c.prompting.prompts import load_template

# our own worked examples, one per technique (shown to the auxiliary model as shots)
SENTENCE_TECHNIQUES: tuple[Technique, ...] = (
    Technique("synonyms", "Replace some words with words of the same meaning.",
              "A man is repairing an old bicycle.", "A man is fixing an old bike."),
    Technique("word forms", "Change the form or part of speech of some words, e.g. a verb into a noun.",
              "The girls are swimming in the lake.", "The girls are having a swim in the lake."),
    Technique("sentence structure", "Restructure the sentence, e.g. switch between active and passive "
              "voice or move a clause.", "A waiter is carrying three plates.",
              "Three plates are being carried by a waiter."),
    Technique("word order", "Move a phrase to another place in the sentence.",
              "Two dogs are running on the beach at noon.", "At noon, two dogs are running on the beach."),
)
_SENTENCE_LABEL = re.compile(r"^\s*(rewritten sentence|negated sentence|sentence)\s*:\s*", re.IGNORECASE)


def techniques(names: Sequence[str]) -> list[Technique]:
    by_name = {t.name: t for t in SENTENCE_TECHNIQUES}
    return [by_name[name] for name in names]


def _clean(text: str) -> str:
    text = _SENTENCE_LABEL.sub("", text.strip())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def paraphrase_sentences(aux: Generator, sentences: Sequence[str], names: Sequence[str], *, seed: int,
                         temperature: float, max_tokens: int) -> list[list[Paraphrase]]:
    """One paraphrase per technique of every sentence, checked like question paraphrases."""
    out = paraphrase_questions(aux, sentences, techniques(names), seed=seed, temperature=temperature,
                               max_tokens=max_tokens, template="paraphrase_sentence")
    cleaned = []
    for sentence, per_sentence in zip(sentences, out, strict=True):
        row = []
        for p in per_sentence:
            text = _clean(p.text)
            problem = paraphrase_problem(sentence, text)
            row.append(Paraphrase(text, p.technique, problem is None, problem))
        cleaned.append(row)
    return cleaned


@dataclass(frozen=True)
class Negation:
    text: str
    ok: bool
    problem: str | None = None


# words that negate an English sentence; a negation must change how many of them it holds
_NEGATORS = frozenset({"not", "no", "never", "nobody", "nothing", "none", "nowhere", "neither", "nor",
                       "cannot", "without"})


def _negators(text: str) -> int:
    words = normalize(text.replace("n't", " not")).split()
    return sum(w in _NEGATORS for w in words)


def negation_problem(sentence: str, text: str) -> str | None:
    """Why a written negation is unusable: a paraphrase's problems (empty, unchanged, several lines, far
    longer), or as many negation words as the sentence (a small model often rewords instead of negating)."""
    problem = paraphrase_problem(sentence, text, extra_words=6)
    if problem in ("empty", "identical"):
        return problem
    return "not negated" if _negators(text) == _negators(sentence) else problem


def negate_sentences(aux: Generator, sentences: Sequence[str], *, max_tokens: int) -> list[Negation]:
    """Greedy negations of every sentence in one batched call."""
    template = load_template("negate_sentence")
    replies = aux.generate([GenerationRequest(messages=template.messages(sentence=s), temperature=0.0,
                                              max_tokens=max_tokens) for s in sentences])
    out = []
    for sentence, reply in zip(sentences, replies, strict=True):
        text = _clean(reply.text)
        problem = negation_problem(sentence, text)
        out.append(Negation(text, problem is None, problem))
    return out
