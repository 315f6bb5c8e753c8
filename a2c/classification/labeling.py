"""The LLM as a classifier: inputs rendered with sentence-type indicators, a few-shot prompt listing the
label words, and the label read from log-probabilities (else from the reply's words).

Reading from log-probabilities follows the `llm` judge: at the first reply position that offers a token
starting one label word (and no other), each label gets the summed probability of its tokens and the
most probable label wins — multi-token words ("ent"+"ail"+"ment") are recognised by their first token.
Without log-probabilities the first label word written in the reply counts. A reply naming no label is
*unparsed*: recorded and counted, never mapped to a guess.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from a2c.llm.base import Completion, GenerationRequest, Generator
from a2c.metrics.calm import IndicatorPair
from a2c.prompts import load_template

ReadMethod = Literal["logprobs", "text", "unparsed"]


def pair_input(premise: str, hypothesis: str, indicators: tuple[str, str], separator: str) -> str:
    """`Premise: …` and `Hypothesis: …` on two lines: CALM's indicator format (paper 004)."""
    return IndicatorPair(indicators[0], premise, indicators[1], hypothesis, separator, "\n").render()


def single_input(text: str, indicator: str, separator: str) -> str:
    return f"{indicator}{separator} {text}"


@dataclass(frozen=True)
class LabelReading:
    label: str | None
    method: ReadMethod
    probabilities: dict[str, float] = field(default_factory=dict)  # over the labels (logprobs only)


def _label_of_token(token: str, words: Mapping[str, str]) -> str | None:
    """The one label whose word starts with this token's text, if exactly one does."""
    piece = token.strip().casefold()
    if not piece:
        return None
    hits = [label for label, word in words.items() if word.casefold().startswith(piece)]
    return hits[0] if len(hits) == 1 else None


def read_label(completion: Completion, words: Mapping[str, str]) -> LabelReading:
    """The label of one reply; `words` maps each label to the word the prompt asked for."""
    for top in completion.logprobs or []:
        mass = dict.fromkeys(words, 0.0)
        for token, logprob in top.items():
            label = _label_of_token(token, words)
            if label is not None:
                mass[label] += math.exp(logprob)
        total = sum(mass.values())
        if total > 0:
            best = max(mass, key=lambda label: mass[label])  # ties: the first label in the set
            return LabelReading(best, "logprobs", {k: v / total for k, v in mass.items()})
    text = completion.text.casefold()
    found = []
    for label, word in words.items():
        match = re.search(rf"(?<!\w){re.escape(word.casefold())}(?!\w)", text)
        if match is not None:
            found.append((match.start(), label))
    if found:
        return LabelReading(min(found)[1], "text")
    first = re.match(r"\W*(\w{3,})", text)  # a word cut by the token budget: "entail"
    if first is not None:
        label = _label_of_token(first.group(1), words)
        if label is not None:
            return LabelReading(label, "text")
    return LabelReading(None, "unparsed")


@dataclass(frozen=True)
class Labeled:
    reply: str
    reading: LabelReading


def label_inputs(generator: Generator, inputs: Sequence[str], words: Mapping[str, str], *, template: str,
                 max_tokens: int, logprobs: int) -> list[Labeled]:
    """Greedy labels of every rendered input in one batched call."""
    tmpl = load_template(template)
    listing = ", ".join(words.values())
    requests = [GenerationRequest(messages=tmpl.messages(labels=listing, input=text), temperature=0.0,
                                  max_tokens=max_tokens, stop=("\n",), logprobs=logprobs or None)
                for text in inputs]
    return [Labeled(g.text, read_label(g.completions[0], words)) for g in generator.generate(requests)]
