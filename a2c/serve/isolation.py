"""One batched pass, many clients: a failed prompt fails only the questions that needed it, and a question
whose client has left is not worked for.

A pass asks the prompts of all its questions in one generate call per step, so a prompt that failed for
good (after its retries) used to fail the call and with it every client of the pass (64 of 64 got 502 with
half the upstream calls failing). `PassGenerator` sits between the pass and the served generator: a failed
prompt gets an empty stand-in answer (`failed_generation`) and is kept, and a prompt that mentions only
questions whose clients left (deadline) is not sent at all, kept the same way. Once the pass is done,
each kept prompt goes to every question one of whose texts it holds (the question, a paraphrase it was
asked as, a question a rank prompt showed: `a2c.serve.usage.mentions`), and those questions get its
error. Every stage prompt holds the text it is about, so no answer built on a stand-in gets out; every
other question was answered without one, since one question's prompts never read another's answers.
When every client of the pass has left, the next generate call ends the pass.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from a2c.choose import Choice
from a2c.common.errors import A2CError
from a2c.llm.base import Generation, GenerationRequest, WrappedGenerator
from a2c.llm.sampling import RequestsFailed, failed_generation
from a2c.serve.usage import anchors, mentions, subject


class ClientsLeft(A2CError):
    """Every client of a pass stopped waiting (deadline): the pass ends before its next step."""


class NotAsked(A2CError):
    """A prompt left out of a step: every question it is about belongs to a client that has left."""


@dataclass
class PassGenerator(WrappedGenerator):
    """The served generator as the pass running now sees it (`begin` starts one; passes run one at a time):
    its questions, per question an event set when its client leaves, and the prompts kept unanswered. One
    instance serves every pass, so the judges built at start-up that ask the served model go through it."""

    questions: Sequence[str] = ()
    left: Sequence[threading.Event] = ()
    failures: list[tuple[GenerationRequest, Exception]] = field(default_factory=list)

    def begin(self, questions: Sequence[str], left: Sequence[threading.Event]) -> None:
        self.questions, self.left, self.failures = questions, left, []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        live = [not event.is_set() for event in self.left]
        if not any(live):
            raise ClientsLeft("every client of this pass has left")
        marks = [{q} for q in self.questions]
        out: list[Generation | None] = [None] * len(requests)
        send: list[int] = []
        for i, request in enumerate(requests):
            about = mentions(subject(request), marks)
            if about and not any(live[q] for q in about):
                out[i] = failed_generation(request)
                self.failures.append((request, NotAsked("not asked: its client had left")))
            else:
                send.append(i)
        try:
            answered = self.inner.generate([requests[i] for i in send]) if send else []
        except RequestsFailed as exc:
            answered = exc.generations
            self.failures += [(requests[send[k]], error) for k, error in exc.errors.items()]
        for k, i in enumerate(send):
            out[i] = answered[k]
        return [g for g in out if g is not None]

    def failed(self, choices: Sequence[Choice]) -> list[Exception | None]:
        """Per question of the pass, the error of the first kept prompt it needed; None: it needed none. A
        kept prompt that mentions no question fails them all: who read its stand-in cannot be told."""
        marks = [anchors(c) for c in choices]
        out: list[Exception | None] = [None] * len(choices)
        for request, error in self.failures:
            for q in mentions(subject(request), marks) or range(len(choices)):
                out[q] = out[q] or error
        return out
