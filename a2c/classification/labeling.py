"""The LLM as a classifier: inputs rendered with sentence-type indicators, a few-shot prompt listing the
label words, and the label read from log-probabilities (else from the reply's words).

Reading from log-probabilities follows the `llm` judge: at the first reply position that offers a token
starting one label word (and no other), each label gets the summed probability of its tokens and the
most probable label wins — multi-token words ("ent"+"ail"+"ment") are recognised by their first token.
Without log-probabilities the first label word written in the reply counts. A reply naming no label is
*unparsed*: recorded and counted, never mapped to a guess.

Contextual calibration (Zhao et al. 2021, "Calibrate before use"), when the config asks for it: the
prompt's own bias is measured by the label probabilities it gives a content-free input ("N/A" in every
field), and each reply's label probabilities are divided by them and renormalised before the most probable
label is taken. Only labels read from log-probabilities are calibrated; the stored probabilities stay the
model's own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from a2c.common.errors import A2CError
from a2c.llm.base import Completion, GenerationRequest, Generator
from a2c.metrics.calm import IndicatorPair
from a2c.prompting.prompts import load_template

ReadMethod = Literal["logprobs", "text", "unparsed"]


class CalibrationError(A2CError, ValueError):
    """The content-free input gave no usable label probabilities, so the labels cannot be calibrated."""


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


def calibrate(probabilities: Mapping[str, float], content_free: Mapping[str, float]) -> dict[str, float]:
    """Zhao et al.'s contextual calibration with W = diag(p_cf)⁻¹ and b = 0: q(l) ∝ p(l) / p_cf(l),
    renormalised over the labels. A label the content-free input gives no probability cannot be weighed."""
    if set(probabilities) != set(content_free):
        raise ValueError(f"labels differ: {sorted(probabilities)} vs content-free {sorted(content_free)}")
    zero = [label for label, p in content_free.items() if not p > 0]
    if zero:
        raise ValueError(f"content-free probability of {zero} is not positive")
    scaled = {label: p / content_free[label] for label, p in probabilities.items()}
    total = sum(scaled.values())
    if not total > 0:
        raise ValueError("no probability mass to calibrate")
    return {label: value / total for label, value in scaled.items()}


def read_label(completion: Completion, words: Mapping[str, str],
               content_free: Mapping[str, float] | None = None) -> LabelReading:
    """The label of one reply; `words` maps each label to the word the prompt asked for. With
    `content_free` probabilities, a label read from log-probabilities is the most probable after
    `calibrate`; `probabilities` keeps the uncalibrated ones."""
    for top in completion.logprobs or []:
        mass = dict.fromkeys(words, 0.0)
        for token, logprob in top.items():
            label = _label_of_token(token, words)
            if label is not None:
                mass[label] += math.exp(logprob)
        total = sum(mass.values())
        if total > 0:
            probabilities = {k: v / total for k, v in mass.items()}
            weighed = calibrate(probabilities, content_free) if content_free else probabilities
            best = max(weighed, key=lambda label: weighed[label])  # ties: the first label in the set
            return LabelReading(best, "logprobs", probabilities)
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
                 max_tokens: int, logprobs: int, content_free: Mapping[str, float] | None = None
                 ) -> list[Labeled]:
    """Greedy labels of every rendered input in one batched call (calibrated by `content_free`, if given)."""
    tmpl = load_template(template)
    listing = ", ".join(words.values())
    requests = [GenerationRequest(messages=tmpl.messages(labels=listing, input=text), temperature=0.0,
                                  max_tokens=max_tokens, stop=("\n",), logprobs=logprobs or None)
                for text in inputs]
    return [Labeled(g.text, read_label(g.completions[0], words, content_free))
            for g in generator.generate(requests)]


def content_free_probabilities(generator: Generator, inputs: Sequence[str], words: Mapping[str, str], *,
                               template: str, max_tokens: int, logprobs: int) -> dict[str, float]:
    """p_cf: the label probabilities the prompt gives content-free inputs, averaged over them (as Zhao et al.
    average "N/A", "[MASK]" and ""), from one batched call. They measure the prompt, not any item, so one
    call serves every input labelled with this prompt."""
    if logprobs < 1:
        raise CalibrationError("contextual calibration needs log-probabilities",
                               hint="set labeling.logprobs to 1 or more")
    readings = [done.reading for done in label_inputs(generator, inputs, words, template=template,
                                                      max_tokens=max_tokens, logprobs=logprobs)]
    for text, reading in zip(inputs, readings, strict=True):
        if reading.method != "logprobs":
            raise CalibrationError(f"the content-free input {text!r} got a reply with no label word among "
                                   f"its top {logprobs} log-probabilities",
                                   hint="raise labeling.logprobs or change labeling.content_free_inputs")
    mean = {label: sum(r.probabilities[label] for r in readings) / len(readings) for label in words}
    zero = [label for label, p in mean.items() if p <= 0]
    if zero:
        raise CalibrationError(f"the content-free input(s) give label(s) {zero} no probability (not among "
                               f"the top {logprobs} tokens), so they cannot be calibrated",
                               hint="raise labeling.logprobs")
    return mean
