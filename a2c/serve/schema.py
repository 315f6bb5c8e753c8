"""The OpenAI request and response shapes `a2c serve` reads and writes, and the `a2c` evidence field.

Requests are read leniently where OpenAI clients differ (extra fields are accepted and listed back as
ignored) and strictly where honouring a field is impossible: asking for several choices, tools, a
response format, log-probabilities or echo is a 400 naming the field, never silently dropped.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from a2c.choose import Choice
from a2c.common.text import normalize
from a2c.common.untrusted import is_blank
from a2c.qa.rows import Source
from a2c.serve.config import describe
from a2c.serve.engine import Answered
from a2c.serve.errors import bad_request

_ONE_CHOICE = "Ask-to-Choose selects one answer per request; for several, send several requests with " \
              "different `seed`s"
_TOOLS = "tool and function calling are not supported: the answer is chosen among the model's text answers"
# fields whose value asks for what a selected answer cannot give: the value test, and why
REFUSED: dict[str, tuple[Callable[[Any], bool], str]] = {
    "n": (lambda v: v not in (None, 1), f"n > 1 is not supported: {_ONE_CHOICE}"),
    "best_of": (lambda v: v not in (None, 1), f"best_of > 1 is not supported: {_ONE_CHOICE}"),
    "tools": (bool, _TOOLS),
    "functions": (bool, _TOOLS),
    "tool_choice": (lambda v: v not in (None, "none"), _TOOLS),
    "function_call": (lambda v: v not in (None, "none"), _TOOLS),
    "response_format": (lambda v: v not in (None, {"type": "text"}),
                        "response_format is not supported: the candidates are free text, and the selected "
                        "one is returned as it was written"),
    "logprobs": (bool, "logprobs are not supported: the selected answer is a vote over several samples, "
                       "not one sample's tokens"),
    "top_logprobs": (bool, "top_logprobs are not supported: the selected answer is a vote over several "
                           "samples, not one sample's tokens"),
    "echo": (bool, "echo is not supported"),
    "suffix": (bool, "suffix (insertion) is not supported"),
}
# what a request never picks, whatever the value: the server's own (its flags and config)
_SERVERS = ("a request never picks the upstream, its key, a cache, a template, a model or a device: those "
            "are the server's (a2c serve's flags and config); the answer settings a request may change go in "
            "`a2c`")
_NEVER_PICKED = ("generator", "backend", "base_url", "base_urls", "api_base", "api_key", "api_key_env",
                 "cache", "template", "model_path", "device")
REFUSED |= {name: (lambda v: v is not None, f"{name}: {_SERVERS}") for name in _NEVER_PICKED}
# fields read from the body; any other is accepted and listed in `a2c.ignored` (e.g. temperature, top_p,
# max_tokens: the variation settings decide how candidates are sampled)
_READ = frozenset({"model", "messages", "prompt", "stream", "stream_options", "seed", "a2c", *REFUSED})


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: StrictBool = False


class _Request(BaseModel):
    model_config = ConfigDict(extra="allow")

    # strict: a JSON `true` is not the seed 1, and "yes" is not `true`
    model: str | None = None
    stream: StrictBool = False
    stream_options: StreamOptions | None = None
    seed: StrictInt | None = None
    a2c: Any = None  # the answer settings to override; checked by a2c.serve.per_request.override

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage


class ChatMessageIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


RequestT = TypeVar("RequestT", bound=_Request)


class ChatRequest(_Request):
    messages: list[ChatMessageIn] = Field(min_length=1)


class CompletionRequest(_Request):
    prompt: str | list[str]


def parse_request(model: type[RequestT], body: Any) -> RequestT:
    """The request, or a 400 naming the first field at fault (refused fields first)."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    for name, (refuses, why) in REFUSED.items():
        if refuses(body.get(name)):
            raise bad_request(why, param=name, code="unsupported_parameter")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        message, key = describe(exc, "")
        raise bad_request(message, param=key) from None


def ignored_fields(body: dict[str, Any]) -> list[str]:
    return sorted(k for k in body if k not in _READ)


def chat_question(request: ChatRequest) -> tuple[str, list[str]]:
    """The last user message's text, and what else of the conversation goes unused."""
    users = [i for i, m in enumerate(request.messages) if m.role == "user"]
    if not users:
        raise bad_request("no user message: Ask-to-Choose answers the last message with role 'user'",
                          param="messages")
    index = users[-1]
    content = request.messages[index].content
    if isinstance(content, list):
        kinds = {part.get("type") for part in content}
        if kinds - {"text"}:
            raise bad_request(f"only text content is supported, got {sorted(map(str, kinds - {'text'}))}",
                              param=f"messages.{index}.content")
        content = "\n".join(str(part.get("text", "")) for part in content)
    if not content or is_blank(content):
        raise bad_request("the last user message is empty (or only invisible characters)",
                          param=f"messages.{index}.content")
    unused = ["earlier messages"] if len(request.messages) > 1 else []
    return content, unused


def completion_question(request: CompletionRequest) -> tuple[str, list[str]]:
    """The prompt (one per request), and nothing unused."""
    prompts = [request.prompt] if isinstance(request.prompt, str) else request.prompt
    if len(prompts) != 1:
        raise bad_request(f"give one prompt per request, got {len(prompts)}: {_ONE_CHOICE}", param="prompt")
    if is_blank(prompts[0]):
        raise bad_request("the prompt is empty (or only invisible characters)", param="prompt")
    return prompts[0], []


# -- responses ---------------------------------------------------------------------------------------------

class Candidate(BaseModel):
    source: Source
    slot: int
    technique: str | None
    temperature: float | None  # None only for a given answer of no said temperature (a samples run)
    asked: str  # the question as the model saw it: a paraphrase, or the question itself
    answer: str  # the text the rank prompts showed (the `answer_field`)


class RankReply(BaseModel):
    source: Source
    slot: int
    shown_question: str
    temperature: float
    options: list[str]  # the last option shown, "don't know", is not listed; `option == len(options)` is it
    reply: str
    option: int | None  # 0-based; None: the reply named no option
    method: str
    text: str | None
    # `options` are listed as the prompt showed them; with `ask_to_choose.option_order` shuffled or cyclic,
    # order[k] is the first-seen index of options[k] (None: first-seen order)
    order: list[int] | None = None


class SourceAgreement(BaseModel):
    n: int  # candidates of this source
    cons_sem: dict[str, float | None]  # per judge; None below two candidates
    entropy: float | None  # bits, over the entropy judge's clusters
    clusters: int


class Tokens(BaseModel):
    prompt: int
    completion: int
    cached_samples: int  # samples the request cache served: no upstream call, no tokens


class BatchInfo(BaseModel):
    questions: int  # questions answered in the same batched pass
    steps: int  # its generate calls: upstream round trips, each one wave of concurrent requests
    model_calls: int  # samples the whole pass generated
    seconds: float
    queued_seconds: float  # this request's wait before its pass started


class Calibrated(BaseModel):
    """What the server's calibration (`a2c serve --calibration`) made of this question."""

    signal: str  # the consistency score calibrated, as the signal table names it
    source: Source  # whose candidates it scores, and whose A2C answer it vouches for
    score: float | None  # the raw signal; None below two candidates
    decline_below: float | None  # the threshold; None: the calibration declines everything
    answer: str | None  # the source's A2C answer (the content, unless declined with a decline text)


SelectedBy = Literal["vote", "majority_candidate", "none", "calibrated_source", "decline_text"]


class Evidence(BaseModel):
    """The `a2c` field: how the answer was selected and how consistent the model was."""

    question: str
    answer: str | None  # the most chosen option; None when no rank reply could be parsed
    selected_by: SelectedBy
    # the content is the rank prompts' "don't know" option (`ask_to_choose.idk_text`): the model chose it
    dont_know: bool
    vote_share: float | None
    candidates: list[Candidate]
    choices: list[RankReply]
    consistency: dict[str, SourceAgreement]  # by source: paraphrase (Y_c), temperature (Y_t)
    entropy_judge: str
    lexical: dict[str, float | None]  # Cons_lex of the candidates and of the chosen texts
    unparsed: int
    failed_paraphrases: list[str]  # techniques whose paraphrase failed its checks (no candidate)
    model_calls: int
    tokens: Tokens
    batch: BatchInfo
    settings: dict[str, Any]
    ignored: list[str]  # request fields that did not change the answer
    # with a calibration: P(the calibrated source's A2C answer is accurate), and whether to decline it
    confidence: float | None = None
    declined: bool | None = None
    calibrated: Calibrated | None = None


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


def selected_text(choice: Choice) -> tuple[str, Literal["vote", "majority_candidate", "none"]]:
    """The content to return: the vote's winner; with no parsed vote the most common candidate; else ""."""
    if choice.answer is not None:
        return choice.answer, "vote"
    texts = [t for t in choice.candidates if normalize(t)]
    if not texts:
        return "", "none"
    votes = Counter(normalize(t) for t in texts)
    top = max(votes.values())
    return next(t for t in texts if votes[normalize(t)] == top).strip(), "majority_candidate"


def chose_dont_know(choice: Choice) -> bool:
    """Whether the vote's winner is the rank prompts' "don't know" option: some parsed reply took the last
    option and its text is the winning one (as the selection stage decides a pick's `dont_know`)."""
    if choice.answer is None:
        return False
    won = normalize(choice.answer)
    return any(c.dont_know and normalize(c.text or "") == won for c in choice.choices)


def served_text(answered: Answered, decline_text: str | None = None) -> tuple[str, SelectedBy]:
    """The content to return. With a calibration: the decline text for a declined answer when one is
    set, else the calibrated source's A2C answer (the answer its confidence is about); without one, or
    when that source gave no answer, `selected_text`."""
    decision = answered.choice.decision
    if decision is not None and decision.declined and decline_text is not None:
        return decline_text, "decline_text"
    if decision is not None and decision.answer is not None:
        return decision.answer, "calibrated_source"
    return selected_text(answered.choice)


def served_dont_know(answered: Answered, selected_by: SelectedBy) -> bool:
    """Whether the content `served_text` returns is the "don't know" option the model chose: the vote's
    winner (`chose_dont_know`), or with a calibration its source's A2C answer, when that is the option."""
    choice = answered.choice
    if selected_by == "vote":
        return chose_dont_know(choice)
    decision = choice.decision
    if selected_by != "calibrated_source" or decision is None or decision.answer is None:
        return False
    won = normalize(decision.answer)
    return any(c.dont_know and c.source == decision.source and normalize(c.text or "") == won
               for c in choice.choices)


def evidence(answered: Answered, settings: dict[str, Any] | None, queued: float,
             ignored: list[str], decline_text: str | None = None) -> Evidence:
    choice = answered.choice
    _, selected_by = served_text(answered, decline_text)
    decision = choice.decision
    calibrated = None if decision is None else Calibrated(
        signal=decision.signal, source=decision.source, score=decision.score,
        decline_below=decision.decline_below, answer=decision.answer)
    rows = choice.choices
    return Evidence(
        question=choice.question, answer=choice.answer, selected_by=selected_by,
        dont_know=served_dont_know(answered, selected_by),
        vote_share=choice.consistency.get("vote_share"),
        candidates=[Candidate(source=g.source, slot=g.slot, technique=g.technique, temperature=g.temperature,
                              asked=g.asked, answer=text)
                    for g, text in zip(choice.generations, choice.candidates, strict=True)],
        choices=[RankReply(**c.model_dump(exclude={"id"})) for c in rows],
        consistency={source: SourceAgreement(**asdict(s)) for source, s in answered.consistency.items()},
        entropy_judge=answered.entropy_judge,
        lexical={"candidates": choice.consistency.get("candidates_lexical"),
                 "choices": choice.consistency.get("choices_lexical")},
        unparsed=int(choice.consistency.get("unparsed") or 0),
        failed_paraphrases=answered.failed_paraphrases,
        model_calls=answered.usage.model_calls,
        tokens=Tokens(prompt=answered.usage.prompt_tokens, completion=answered.usage.completion_tokens,
                      cached_samples=answered.usage.cached),
        batch=BatchInfo(questions=answered.pass_questions, steps=answered.pass_steps,
                        model_calls=answered.pass_usage.model_calls,
                        seconds=round(answered.pass_seconds, 3), queued_seconds=round(queued, 3)),
        settings=settings or {}, ignored=ignored, confidence=choice.confidence, declined=choice.declined,
        calibrated=calibrated)


def usage_of(answered: Answered) -> Usage:
    spent = answered.usage
    return Usage(prompt_tokens=spent.prompt_tokens, completion_tokens=spent.completion_tokens,
                 total_tokens=spent.prompt_tokens + spent.completion_tokens)


Endpoint = Literal["chat", "completions"]
# per endpoint: its request model and how to read the question from it
ENDPOINTS: dict[Endpoint, tuple[type[_Request], Callable[[Any], tuple[str, list[str]]]]] = {
    "chat": (ChatRequest, chat_question),
    "completions": (CompletionRequest, completion_question),
}


def response_id(endpoint: Endpoint) -> str:
    return f"{'chatcmpl' if endpoint == 'chat' else 'cmpl'}-{uuid.uuid4().hex}"


def completion_body(endpoint: Endpoint, model: str, answered: Answered, proof: Evidence,
                    decline_text: str | None = None) -> dict[str, Any]:
    """The whole (non-streamed) response."""
    content, _ = served_text(answered, decline_text)
    if endpoint == "chat":
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": content},
                                  "logprobs": None, "finish_reason": "stop"}
    else:
        choice = {"index": 0, "text": content, "logprobs": None, "finish_reason": "stop"}
    kind = "chat.completion" if endpoint == "chat" else "text_completion"
    return {"id": response_id(endpoint), "object": kind,
            "created": int(time.time()), "model": model, "choices": [choice],
            "usage": usage_of(answered).model_dump(), "a2c": proof.model_dump(mode="json")}


def stream_chunks(endpoint: Endpoint, model: str, answered: Answered, proof: Evidence,
                  include_usage: bool, decline_text: str | None = None) -> list[dict[str, Any]]:
    """The selected answer as a stream: one content chunk, the final chunk (with `a2c`), and the usage
    chunk when `stream_options.include_usage` asks for it."""
    content, _ = served_text(answered, decline_text)
    head = {"id": response_id(endpoint),
            "object": "chat.completion.chunk" if endpoint == "chat" else "text_completion",
            "created": int(time.time()), "model": model}

    def choice(text: str | None, finish: str | None) -> dict[str, Any]:
        if endpoint == "chat":
            delta = {} if text is None else {"role": "assistant", "content": text}
            return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}

    chunks: list[dict[str, Any]] = [{**head, "choices": [choice(content, None)]},
              {**head, "choices": [choice(None, "stop")], "a2c": proof.model_dump(mode="json")}]
    if include_usage:
        chunks.append({**head, "choices": [], "usage": usage_of(answered).model_dump()})
    return chunks


