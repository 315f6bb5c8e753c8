"""Universal Self-Consistency (Chen et al. 2023) as a selection method: the model is shown all its answers to
a question and asked which one is most consistent with the others.

One prompt per question and source (`prompts/usc.yaml`, our wording), every prompt of the dataset in one
batched generate call. Unlike a rank prompt, repeats are kept (three equal answers are the evidence USC
weighs) and there is no "don't know" option. The reply is read by Ask-to-Choose's own parser
(`a2c.qa.rank.parse_reply`); a reply that names no shown response — "don't know" included — is unparsed:
counted, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from a2c.common.text import normalize
from a2c.llm.base import GenerationRequest, Generator
from a2c.prompting.prompts import load_template
from a2c.qa.rank import ParsedReply, RankOptions, parse_reply


@dataclass(frozen=True)
class Responses:
    """The candidates of one question and source as USC shows them: the non-empty ones, repeats kept, in
    candidate order; `shown[k]` is the candidate index of response k + 1."""

    candidates: tuple[str, ...]
    shown: tuple[int, ...]

    @classmethod
    def of(cls, candidates: Sequence[str]) -> Responses:
        return cls(tuple(candidates), tuple(i for i, text in enumerate(candidates) if normalize(text)))

    def render(self) -> str:
        return "\n".join(f"{k + 1}. {' '.join(self.candidates[i].split())}" for k, i in enumerate(self.shown))

    def options(self) -> RankOptions:
        """The responses as the option list `parse_reply` reads (its extra last option, "don't know", is
        never shown here, so a reply naming it is unparsed)."""
        mapping = {i: k for k, i in enumerate(self.shown)}
        return RankOptions(self.candidates, tuple(self.candidates[i].strip() for i in self.shown),
                           tuple(mapping.get(i) for i in range(len(self.candidates))))


@dataclass(frozen=True)
class UscPick:
    """The reply to one USC prompt and the candidate it names (None when it names none)."""

    reply: str
    parsed: ParsedReply
    candidate: int | None


def usc_request(question: str, responses: Responses, *, max_tokens: int = 8, seed: int | None = None
                ) -> GenerationRequest:
    """One greedy USC prompt; a short reply budget, since one response number is wanted."""
    messages = load_template("usc").messages(question=question, responses=responses.render())
    return GenerationRequest(messages=messages, temperature=0.0, top_p=1.0, max_tokens=max_tokens, seed=seed,
                             stop=("\n",))


def read_usc_reply(reply: str, responses: Responses) -> UscPick:
    """The candidate a reply names: a response number, a response's text, ... as `parse_reply` reads rank
    replies; "don't know" (not an option here) and anything else name none. A reply that repeats the text
    of a response listed twice names the first of them (by position it is ambiguous, by meaning not)."""
    parsed = parse_reply(reply, responses.options())
    if parsed.option is not None and parsed.option < len(responses.shown):
        return UscPick(reply, parsed, responses.shown[parsed.option])
    merged = RankOptions.build([responses.candidates[i] for i in responses.shown])
    by_text = parse_reply(reply, merged)
    if by_text.method == "text" and by_text.option is not None:
        return UscPick(reply, by_text, responses.shown[merged.candidates_of(by_text.option)[0]])
    return UscPick(reply, parsed, None)


def universal_self_consistency(generator: Generator, questions: Sequence[str],
                               responses: Sequence[Responses], seeds: Sequence[int | None], *,
                               max_tokens: int = 8) -> list[UscPick]:
    """Ask every USC prompt of the dataset in one batched generate call (none when `questions` is empty)."""
    requests = [usc_request(q, r, max_tokens=max_tokens, seed=s)
                for q, r, s in zip(questions, responses, seeds, strict=True)]
    generations = generator.generate(requests) if requests else []
    return [read_usc_reply(g.text, r) for g, r in zip(generations, responses, strict=True)]
