"""`a2c serve`: settings, refusals, masking, usage attribution and batching in process (scripted backend),
then real `a2c serve` processes in front of llama.cpp (embedded SmolLM2), called with the `openai` client."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.choose import AskToChoose, Choice
from a2c.cli import build_parser, main
from a2c.common.redact import redact
from a2c.llm import Completion, Generation, GenerationRequest, GeneratorConfig, Message, build_generator
from a2c.models.embedded import DEFAULT_MODEL
from a2c.prompting.paraphrase import DEFAULT_TECHNIQUES
from a2c.serve.app import build_state, create_app
from a2c.serve.batcher import Batcher, QueueFull
from a2c.serve.config import (
    ServeConfigError,
    SettingsError,
    answer_settings,
    build_serve_config,
    read_serve_file,
)
from a2c.serve.engine import wrapper
from a2c.serve.errors import APIError
from a2c.serve.per_request import check_limits, model_calls, override
from a2c.serve.schema import ChatRequest, chat_question, ignored_fields, parse_request, selected_text
from a2c.serve.usage import attribute, subject
from tests.conftest import LlamaServer, free_port
from tests.serve_process import CLIENT_KEY, SMALL, ServeProcess

SCRIPTED = {"backend": "scripted", "model": "scripted"}
# two techniques, two temperatures: 4 candidates, 4 rank prompts per question
SETTINGS = {"variation": {"techniques": ["synonyms", "word forms"], "temperatures": [0.5, 1.0]},
            "judges": ["exact"]}
QUESTIONS = [f"How many legs does animal number {i} have?" for i in range(32)]


# -- answer settings --------------------------------------------------------------------------------------

def test_request_settings_go_on_top_of_the_servers_key_by_key():
    defaults = answer_settings(SETTINGS, "")
    merged = override(defaults, {"variation": {"temperatures": [0.3]},
                                 "ask_to_choose": {"idk_text": "No idea"}, "seed": 9})
    assert merged.variation.temperatures == [0.3]
    assert merged.variation.techniques == ["synonyms", "word forms"]  # kept from the server's settings
    assert merged.ask_to_choose.idk_text == "No idea" and merged.ask_to_choose.max_tokens == 8
    assert merged.seed == 9 and defaults.seed == 0
    assert override(defaults, None) is defaults and override(defaults, {}) is defaults


def test_judges_given_without_entropy_judge_reset_it():
    defaults = answer_settings({"judges": ["exact", "rouge1"], "entropy_judge": "rouge1"}, "")
    assert override(defaults, {"judges": ["exact"]}).entropy_judge_name == "exact"


@pytest.mark.parametrize(("given_settings", "param"), [
    ({"temperatures": [0.5]}, "a2c.temperatures"),  # a variation key at the wrong level
    ({"variation": {"temperaturess": [1]}}, "a2c.variation.temperaturess"),
    ({"variation": {"temperatures": [-1.0]}}, "a2c.variation.temperatures"),
    ({"ask_to_choose": {"rank_temperature": "hot"}}, "a2c.ask_to_choose.rank_temperature"),
    ({"judges": ["no-such-judge"]}, "a2c.judges.0.name"),
    ("greedy", "a2c"),
])
def test_bad_request_settings_name_the_key(given_settings, param):
    with pytest.raises(SettingsError) as caught:
        override(answer_settings({}, ""), given_settings)
    assert caught.value.param == param
    assert str(caught.value).startswith(param)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=2, allow_nan=False), min_size=1, max_size=4),
       st.integers(min_value=0, max_value=2**31))
def test_overriding_temperatures_and_seed_changes_nothing_else(temperatures, seed):
    defaults = answer_settings(SETTINGS, "")
    merged = override(defaults, {"variation": {"temperatures": temperatures}, "seed": seed})
    assert merged.variation.temperatures == temperatures and merged.seed == seed
    assert merged.variation.model_dump(exclude={"temperatures"}) == \
        defaults.variation.model_dump(exclude={"temperatures"})
    assert merged.judges == defaults.judges and merged.ask_to_choose == defaults.ask_to_choose


def test_a_request_names_judges_of_the_server_and_gives_no_options_or_paths():
    defaults = answer_settings({"judges": ["exact", {"name": "rouge1", "threshold": 0.4}]}, "")
    merged = override(defaults, {"judges": ["rouge1"], "entropy_judge": "rouge1"})
    assert merged.judges == [defaults.judges[1]] and merged.judges[0].options == {"threshold": 0.4}
    generator = {"backend": "openai", "model": "m", "base_urls": ["http://127.0.0.1:9/v1"]}
    technique = {"name": "x", "instruction": "i", "example_question": "q", "example_paraphrase": "p"}
    for hostile, param in [
        ({"judges": [{"name": "rouge1", "threshold": 0.9}]}, "a2c.judges.0.threshold"),
        ({"judges": ["exact", {"name": "llm", "generator": generator}]}, "a2c.judges.1.generator"),
        ({"judges": ["llm"]}, "a2c.judges.0.name"),
        ({"variation": {"techniques": [{**technique, "template": "t.yaml"}]}},
         "a2c.variation.techniques.0.template"),
        ({"ask_to_choose": {"cache": "x.sqlite"}}, "a2c.ask_to_choose.cache"),
        ({"seed": True}, "a2c.seed"),
        ({"ask_to_choose": {"enabled": "yes"}}, "a2c.ask_to_choose.enabled"),
    ]:
        with pytest.raises(SettingsError) as caught:
            override(defaults, hostile)
        assert caught.value.param == param and str(caught.value).startswith(param)
    assert override(defaults, {"variation": {"techniques": [technique]}}).variation.techniques[0].name == "x"


@pytest.mark.filterwarnings("ignore::a2c.judges.llm.UnparsedReplyWarning")
@pytest.mark.parametrize("given", [
    {"variation": {"techniques": ["synonyms"], "temperatures": [0.5]}},
    {"variation": {"techniques": ["synonyms", "word forms"], "temperatures": [0.2, 0.8], "samples": 3}},
    {"variation": {"temperatures": [0.5], "samples": 2}, "ask_to_choose": {"max_tokens": 2}},
    {"variation": {"techniques": ["synonyms"], "temperatures": [0.2, 0.8]}, "judges": ["llm"]},
])
def test_the_calls_counted_before_a_request_bound_what_it_costs(given):
    settings = answer_settings({"judges": ["exact"], **given}, "")
    generator = scripted()  # one instance per process: count what this answer adds
    before = generator.stats.generated
    wrapper(generator, settings).answer_many([f"{QUESTIONS[0]} {given}"], judges=settings.judges)
    assert 0 < generator.stats.generated - before <= model_calls(settings)
    server = build_serve_config({}, SCRIPTED, {"max_calls_per_request": model_calls(settings) - 1}).server
    with pytest.raises(SettingsError, match=r"server\.max_calls_per_request"):
        check_limits(settings, server)


def test_serve_file_sections_are_checked(tmp_path):
    bad = tmp_path / "serve.yaml"
    bad.write_text("variation: {temperatures: [0.5]}\ndataset: {name: quickstart}\n")
    with pytest.raises(ServeConfigError, match="dataset: unknown key"):
        read_serve_file(bad)
    bad.write_text("task: classification\nvariation: {temperatures: [0.5]}\n")
    with pytest.raises(ServeConfigError, match=r"serve.yaml: task: 'classification' does not support a2c "
                       r"serve \(tasks that do: qa\)$"):
        read_serve_file(bad)
    bad.write_text("task: qa\nvariation: {temperatures: [0.5]}\n")
    assert read_serve_file(bad) == {"variation": {"temperatures": [0.5]}}
    bad.write_text("task: nope\n")
    with pytest.raises(ServeConfigError, match="task: unknown task 'nope'"):
        read_serve_file(bad)
    with pytest.raises(ServeConfigError, match=r"server\.max_pending"):
        build_serve_config({}, SCRIPTED, {"max_pending": 0})
    with pytest.raises(ServeConfigError, match=r"variation\.samples"):
        build_serve_config({"variation": {"samples": 0}}, SCRIPTED, {})
    good = build_serve_config({"server": {"deadline": 5}}, SCRIPTED, {"max_batch": 3})
    assert good.server.deadline == 5 and good.server.max_batch == 3
    assert good.generator.cache is None  # no request cache unless given


# -- masking ----------------------------------------------------------------------------------------------

def test_key_like_text_is_masked():
    text = ('401 from upstream: {"detail": "Invalid API key", "got": "Bearer abc.def-123", '
            '"api_key": "s3cr3t", "hint": "sk-proj-AbCdEf123456", "session": "'
            + "aB3" * 14 + '"} for my-upstream-key-1; model sentence-transformers/paraphrase-multilingual-'
            'MiniLM-L12-v2 expected a string')
    masked = redact(text, ["my-upstream-key-1"])
    for secret in ("abc.def-123", "s3cr3t", "sk-proj-AbCdEf123456", "aB3" * 14, "my-upstream-key-1"):
        assert secret not in masked
    assert "Invalid API key" in masked and "Bearer ***" in masked and masked.startswith("401 from upstream")
    # words and hub ids stay readable (the serve log once showed `org/***` and `***` for `expected`)
    assert "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2 expected a string" in masked


@given(st.text(max_size=40), st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=6,
                                     max_size=24), st.text(max_size=40))
def test_a_known_secret_never_survives_masking(before, secret, after):
    assert secret not in redact(before + secret + after + secret, [secret])


# -- requests ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [
    ("n", 2), ("best_of", 3), ("tools", [{"type": "function", "function": {"name": "f"}}]),
    ("tool_choice", "auto"), ("response_format", {"type": "json_object"}), ("logprobs", True),
    ("top_logprobs", 2), ("echo", True),
])
def test_fields_a_selected_answer_cannot_honour_are_refused(field, value):
    body = {"messages": [{"role": "user", "content": "hi"}], field: value}
    with pytest.raises(APIError) as caught:
        parse_request(ChatRequest, body)
    assert caught.value.status == 400 and caught.value.param == field
    assert caught.value.body()["error"]["code"] == "unsupported_parameter"


def test_harmless_values_of_those_fields_are_accepted_and_sampling_fields_listed_as_ignored():
    body = {"model": "m", "messages": [{"role": "system", "content": "be brief"},
                                       {"role": "user", "content": "first"},
                                       {"role": "assistant", "content": "ok"},
                                       {"role": "user", "content": [{"type": "text", "text": "Why is"},
                                                                    {"type": "text", "text": "ice cold?"}]}],
            "n": 1, "response_format": {"type": "text"}, "tool_choice": "none", "temperature": 0.2,
            "max_tokens": 5, "seed": 4}
    request = parse_request(ChatRequest, body)
    assert chat_question(request) == ("Why is\nice cold?", ["earlier messages"])
    assert ignored_fields(body) == ["max_tokens", "temperature"]


@pytest.mark.parametrize(("messages", "param"), [
    ([{"role": "system", "content": "x"}], "messages"),
    ([{"role": "user", "content": "  "}], "messages.0.content"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], "messages.0.content"),
])
def test_a_request_without_a_question_is_refused(messages, param):
    with pytest.raises(APIError) as caught:
        chat_question(parse_request(ChatRequest, {"messages": messages}))
    assert caught.value.status == 400 and caught.value.param == param


# -- usage attribution ------------------------------------------------------------------------------------

def _generation(text: str, prompt_tokens: int, completion_tokens: int, cached: bool = False) -> Generation:
    request = GenerationRequest(messages=(Message("system", "rules"), Message("user", text)))
    return Generation(request, [Completion("a", "stop", completion_tokens)], prompt_tokens, [cached])


def _choice(question: str, asked: list[str]) -> Choice:
    return Choice(question, "a", ["a"] * len(asked), [], asked=asked)


def test_each_call_is_charged_to_the_question_its_prompt_is_about():
    choices = [_choice("What is water?", ["What is water?", "Water is what?"]),
               _choice("What is water made of?", ["What is water made of?"])]
    calls = [[_generation("Original question: What is water?", 100, 10),
              _generation("Original question: What is water made of?", 120, 12)],
             [_generation("Water is what?", 50, 5),
              _generation("Water is what?", 50, 5),  # the same prompt twice in one call: asked once
              _generation("Question: What is water made of?\nShort answer:", 70, 3, cached=True),
              _generation("an unrelated prompt", 9, 1)]]
    per_question, total = attribute(calls, choices)
    # "What is water made of?" holds "What is water" too: the longest text it holds decides
    assert (per_question[0].model_calls, per_question[0].prompt_tokens, per_question[0].completion_tokens) \
        == (2, 150, 15)
    assert (per_question[1].model_calls, per_question[1].prompt_tokens, per_question[1].cached) == (1, 120, 1)
    assert (total.model_calls, total.prompt_tokens, total.completion_tokens, total.cached) == (4, 279, 28, 1)


# -- the batcher ------------------------------------------------------------------------------------------

def test_batcher_gathers_a_full_batch_at_once_refuses_past_max_pending_and_drops_abandoned_jobs():
    seen: list[list[int]] = []

    def run_batch(items):
        seen.append(list(items))
        return [ValueError(i) if i == 3 else i * 10 for i in items]

    async def scenario():
        batcher: Batcher[int, int] = Batcher(run_batch, window=60.0, max_batch=3, max_pending=4)
        batcher.start()
        jobs = [batcher.submit(i) for i in range(4)]
        with pytest.raises(QueueFull):
            batcher.submit(99)
        batcher.abandon(jobs[3])  # still queued: dropped, its place freed
        last = batcher.submit(5)
        # the first three are a full batch: they go although the 60 s window has not passed
        assert await asyncio.wait_for(asyncio.gather(*(j.future for j in jobs[:3])), 30) == [0, 10, 20]
        pending = batcher.pending
        await batcher.stop()
        return last, pending

    last, pending = asyncio.run(scenario())
    assert seen == [[0, 1, 2]] and pending == 1  # job 5 was waiting for its window when the batcher stopped
    assert last.future.cancelled()

    async def failing():
        batcher: Batcher[int, int] = Batcher(run_batch, window=0.0, max_batch=8, max_pending=8)
        batcher.start()
        ok, bad = batcher.submit(1), batcher.submit(3)
        with pytest.raises(ValueError):
            await asyncio.wait_for(bad.future, 30)
        result = await ok.future
        await batcher.stop()
        return result, batcher.pending

    assert asyncio.run(failing()) == (10, 0)


# -- the app in process, on the scripted backend ----------------------------------------------------------

class Gate:
    """A `Generator` that counts its generate calls and, while closed, holds them (a slow model)."""

    def __init__(self, inner, closed: bool = False) -> None:
        self.inner, self.calls = inner, 0
        self.asked: list[list[GenerationRequest]] = []  # the requests of each call
        self.entered, self.opened = threading.Event(), threading.Event()
        if not closed:
            self.opened.set()

    backend = property(lambda self: self.inner.backend)
    model = property(lambda self: self.inner.model)
    stats = property(lambda self: self.inner.stats)

    def generate(self, requests):
        self.calls += 1
        self.asked.append(list(requests))
        self.entered.set()
        assert self.opened.wait(60)
        return self.inner.generate(requests)


def scripted():
    return build_generator(GeneratorConfig(backend="scripted", model="scripted", cache=None))


def serve_app(generator, settings: dict[str, Any] = SETTINGS, api_key: str | None = None, **server: Any):
    state = build_state(build_serve_config(settings, SCRIPTED, server), generator, api_key=api_key)
    return create_app(state), state


def against(app, scenario: Callable[[httpx.AsyncClient], Awaitable[Any]]) -> Any:
    async def session():
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://a2c", timeout=60) as client:
                return await scenario(client)

    return asyncio.run(session())


def chat(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": "scripted", "messages": [{"role": "user", "content": question}], **extra}


def test_32_concurrent_requests_cost_as_many_generate_calls_as_one():
    alone = Gate(scripted())
    AskToChoose(alone, techniques=DEFAULT_TECHNIQUES[:2], temperatures=(0.5, 1.0)).answer(QUESTIONS[0])
    gate = Gate(scripted())
    app, _ = serve_app(gate, batch_window=60.0, max_batch=32)  # the 32nd request starts the pass

    async def scenario(client):
        return await asyncio.gather(*(client.post("/v1/chat/completions", json=chat(q)) for q in QUESTIONS))

    responses = against(app, scenario)
    assert [r.status_code for r in responses] == [200] * 32
    assert alone.calls >= 5  # paraphrase, long and short answers, fresh paraphrase, rank
    assert gate.calls <= alone.calls + 2  # at most one more paraphrase retry per paraphrase step
    bodies = [r.json() for r in responses]
    assert {(b["a2c"]["batch"]["questions"], b["a2c"]["batch"]["steps"]) for b in bodies} == \
        {(32, gate.calls)}
    assert sum(b["a2c"]["model_calls"] for b in bodies) <= bodies[0]["a2c"]["batch"]["model_calls"]
    assert all(b["usage"]["total_tokens"] == b["a2c"]["tokens"]["prompt"] + b["a2c"]["tokens"]["completion"]
               for b in bodies)


def test_served_answers_equal_ask_to_choose_for_the_same_question_seed_and_settings():
    app, _ = serve_app(scripted(), batch_window=60.0, max_batch=6)
    asked = [(q, seed) for q in QUESTIONS[:3] for seed in (0, 7)]  # two settings in one window: two passes

    async def scenario(client):
        return await asyncio.gather(*(client.post("/v1/chat/completions", json=chat(q, seed=seed))
                                      for q, seed in asked))

    served = [r.json() for r in against(app, scenario)]
    for (question, seed), body in zip(asked, served, strict=True):
        expected = AskToChoose(scripted(), techniques=DEFAULT_TECHNIQUES[:2], temperatures=(0.5, 1.0),
                               seed=seed).answer(question)
        proof = body["a2c"]
        # the content is the vote's winner, or with no parsed vote the most common candidate (`selected_text`)
        assert body["choices"][0]["message"]["content"] == selected_text(expected)[0]
        assert proof["answer"] == expected.answer and proof["settings"]["seed"] == seed
        assert [c["answer"] for c in proof["candidates"]] == expected.candidates
        assert [(c["reply"], c["option"], c["shown_question"]) for c in proof["choices"]] == \
            [(c.reply, c.option, c.shown_question) for c in expected.choices]
        assert proof["vote_share"] == expected.consistency["vote_share"]
        assert proof["batch"]["questions"] == 3
        assert set(proof["consistency"]) == {"paraphrase", "temperature"}
        assert proof["consistency"]["temperature"]["n"] == 2


def test_streaming_sends_one_content_chunk_then_the_final_chunk_and_done():
    app, _ = serve_app(scripted(), batch_window=0.0)

    async def scenario(client):
        plain = await client.post("/v1/completions", json={"prompt": QUESTIONS[1]})
        streamed = {"prompt": QUESTIONS[1], "stream": True, "stream_options": {"include_usage": True}}
        async with client.stream("POST", "/v1/completions", json=streamed) as r:
            return plain.json(), r.headers["content-type"], [line async for line in r.aiter_lines() if line]

    plain, kind, lines = against(app, scenario)
    assert kind.startswith("text/event-stream")
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    content, final, usage = (json.loads(line[6:]) for line in lines[:-1])
    assert content["object"] == "text_completion"
    assert content["choices"][0]["text"] == plain["choices"][0]["text"]
    assert final["choices"][0]["finish_reason"] == "stop" and final["a2c"]["answer"] == plain["a2c"]["answer"]
    assert usage["choices"] == [] and usage["usage"] == plain["usage"]


def test_a_full_queue_answers_429_and_a_passed_deadline_504_saying_what_was_done():
    gate = Gate(scripted(), closed=True)
    app, state = serve_app(gate, batch_window=0.0, max_pending=2, deadline=2.0)

    async def scenario(client):
        first = asyncio.create_task(client.post("/v1/chat/completions", json=chat(QUESTIONS[0])))
        await asyncio.to_thread(gate.entered.wait, 30)  # its pass is running and held
        second = asyncio.create_task(client.post("/v1/chat/completions", json=chat(QUESTIONS[1])))
        while state.batcher.pending < 2:
            await asyncio.sleep(0.01)
        refused = await client.post("/v1/chat/completions", json=chat(QUESTIONS[2]))
        late_running, late_queued = await first, await second
        pending_while_held = state.batcher.pending  # the queued one was dropped, the running pass goes on
        gate.opened.set()
        while state.batcher.pending:
            await asyncio.sleep(0.01)
        after = await client.post("/v1/chat/completions", json=chat(QUESTIONS[3]))
        return refused, late_running, late_queued, pending_while_held, after

    refused, late_running, late_queued, pending_while_held, after = against(app, scenario)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert refused.json()["error"]["code"] == "queue_full"
    assert late_running.status_code == 504 and late_queued.status_code == 504
    running, queued = late_running.json()["error"], late_queued.json()["error"]
    assert running["code"] == "deadline_exceeded" and running["a2c"]["state"] == "running"
    assert running["a2c"]["batch_questions"] == 1 and "ran" in running["message"]
    assert queued["a2c"] == {"state": "queued", "queued_seconds": queued["a2c"]["queued_seconds"], "steps": 0,
                             "samples": 0}
    assert pending_while_held == 1
    assert after.status_code == 200


def test_a_client_that_leaves_is_not_worked_for_and_its_neighbour_is_answered():
    gate = Gate(scripted(), closed=True)
    app, state = serve_app(gate, batch_window=60.0, max_batch=2)
    stays, leaves = QUESTIONS[0], QUESTIONS[1]

    async def scenario(client):
        kept = asyncio.create_task(client.post("/v1/chat/completions", json=chat(stays)))
        gone = asyncio.create_task(client.post("/v1/chat/completions", json=chat(leaves)))
        await asyncio.to_thread(gate.entered.wait, 30)  # their pass holds its first step
        gone.cancel()  # the client goes away
        with contextlib.suppress(asyncio.CancelledError):
            await gone
        gate.opened.set()
        return await kept, state.batcher.pending

    answered, pending = against(app, scenario)
    assert answered.status_code == 200 and pending == 0
    assert any(leaves in subject(r) for r in gate.asked[0])  # asked together at first
    assert not any(leaves in subject(r) for call in gate.asked[1:] for r in call)  # then never again
    assert sum(stays in subject(r) for call in gate.asked[1:] for r in call) > 0
    alone = AskToChoose(scripted(), techniques=DEFAULT_TECHNIQUES[:2], temperatures=(0.5, 1.0))
    expected = alone.answer(stays)
    proof = answered.json()["a2c"]
    assert proof["answer"] == expected.answer and proof["batch"]["questions"] == 2
    assert [c["answer"] for c in proof["candidates"]] == expected.candidates


def test_auth_body_limit_and_error_shapes(caplog):
    app, _ = serve_app(scripted(), api_key="client-key", batch_window=0.0, max_body_bytes=2000,
                       log_requests=True)
    auth = {"Authorization": "Bearer client-key"}

    async def chunks():
        for _ in range(5):
            yield b" " * 500

    async def scenario(client):
        return {
            "none": await client.get("/v1/models"),
            "wrong": await client.get("/v1/models", headers={"Authorization": "Bearer client-kez"}),
            "models": await client.get("/v1/models", headers=auth),
            "health": await client.get("/health"),
            "large": await client.post("/v1/chat/completions", headers=auth, json=chat("x" * 3000)),
            "chunked": await client.post("/v1/chat/completions", headers=auth, content=chunks()),
            "not json": await client.post("/v1/chat/completions", headers=auth, content=b"{oops"),
            "no route": await client.get("/v1/engines", headers=auth),
            "asked": await client.post("/v1/chat/completions", headers=auth, json=chat("Why is ice cold?")),
        }

    with caplog.at_level("INFO", logger="a2c.serve.access"):
        got = against(app, scenario)
    statuses = {name: r.status_code for name, r in got.items()}
    assert statuses == {"none": 401, "wrong": 401, "models": 200, "health": 200, "large": 413, "chunked": 413,
                        "not json": 400, "no route": 404, "asked": 200}
    assert got["none"].json()["error"]["code"] == "invalid_api_key"
    assert got["large"].json()["error"]["code"] == "request_too_large"
    assert got["models"].json()["data"][0]["id"] == "scripted"
    for response in got.values():
        if response.status_code != 200:
            assert set(response.json()["error"]) == {"message", "type", "param", "code"}
    lines = [r.getMessage() for r in caplog.records if r.name == "a2c.serve.access"]
    assert len(lines) == len(got)
    asked = r'POST /v1/chat/completions 200 \d+ ms model_calls=[1-9]\d* question="Why is ice cold\?"'
    assert re.fullmatch(asked, lines[-1])
    assert "client-key" not in "\n".join(lines)


# -- the command line -------------------------------------------------------------------------------------

def test_serve_without_a_model_is_a_one_line_error(capsys):
    assert main(["serve"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("a2c: error: no model to serve") and err[1].startswith("hint:")


def test_a_server_whose_own_settings_pass_its_limits_does_not_start(tmp_path, capsys):
    config = tmp_path / "serve.yaml"
    config.write_text("variation: {samples: 3}\n")
    assert main(["serve", "--upstream", "http://127.0.0.1:9/v1", "--config", str(config),
                 "--max-samples", "2"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "variation.samples: 3 is more than this server allows: at most 2 (server.max_samples)" in err[0]
    assert err[1].startswith("hint:")


def test_every_serve_flag_is_explained(capsys):
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    serve = sub.choices["serve"]
    flags = [a for a in serve._actions if a.option_strings and a.dest not in {"help", "debug"}]
    assert len(flags) == 26  # with --calibration, --decline-text and --model-alias
    assert all(len(a.help or "") > 20 for a in flags), [a.dest for a in flags if len(a.help or "") <= 20]
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = capsys.readouterr().out
    assert all(a.option_strings[0] in text for a in flags)
    assert "extra_body" in text and "SIGTERM" in text


# -- real processes: a2c serve in front of llama.cpp, called with the openai client -------------------------

UPSTREAM_KEY = "upkey-7f3a9c2e51"  # not key-like by its looks: only the exact masking can hide it


class EchoingUpstream(BaseHTTPRequestHandler):
    """An upstream that refuses every completion, quoting back the credentials it was sent."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        sent = self.headers["Authorization"]
        said = {"error": {"message": f"model not found; you sent Authorization: {sent}"}}
        body = json.dumps(said).encode()
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def upstream():
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] not installed (make setup)")
    server = LlamaServer(api_key=UPSTREAM_KEY)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def servers(upstream, tmp_path_factory):
    """Every a2c serve process of these tests, started together (each start imports a2c: seconds)."""
    folder = tmp_path_factory.mktemp("serve")
    (folder / "serve.yaml").write_text(json.dumps(SMALL))  # JSON is YAML
    echo = ThreadingHTTPServer(("127.0.0.1", 0), EchoingUpstream)
    threading.Thread(target=echo.serve_forever, daemon=True).start()
    keyed = {"OPENAI_API_KEY": UPSTREAM_KEY, "A2C_SERVE_API_KEY": CLIENT_KEY}
    common = ("--config", str(folder / "serve.yaml"), "--model", DEFAULT_MODEL)
    refused_url, echo_url = f"http://127.0.0.1:{free_port()}/v1", f"http://127.0.0.1:{echo.server_port}/v1"
    procs = {
        "main": ServeProcess(folder, "main", "--upstream", upstream.base_url, *common, "--max-body", "4096",
                             "--cache", str(folder / "cache.sqlite"), env=keyed),
        "drain": ServeProcess(folder, "drain", "--upstream", upstream.base_url, *common, "--max-pending", "1",
                              env=keyed),
        "deadline": ServeProcess(folder, "deadline", "--upstream", upstream.base_url, *common,
                                 "--deadline", "0.5", env=keyed),
        "refused": ServeProcess(folder, "refused", "--upstream", refused_url, *common, "--retries", "0",
                                env=keyed),
        "echo": ServeProcess(folder, "echo", "--upstream", echo_url, *common, env=keyed),
    }
    try:
        for proc in procs.values():
            proc.wait_healthy()
        yield folder, procs
    finally:
        for proc in procs.values():
            proc.stop()
        echo.shutdown()


SEEN: list[str] = []  # every response and error body the tests got, searched for the upstream key at the end


def _chat(client, question: str, **options: Any):
    response = client.chat.completions.create(model=DEFAULT_MODEL,
                                              messages=[{"role": "user", "content": question}], **options)
    SEEN.append(response.model_dump_json())
    return response


def _error(call: Callable[[], Any]) -> Any:
    from openai import APIStatusError

    with pytest.raises(APIStatusError) as caught:
        call()
    SEEN.append(json.dumps(caught.value.body) + str(caught.value.response.headers))
    return caught.value


@pytest.mark.slow
def test_chat_and_completions_through_the_openai_client_equal_ask_to_choose(servers, upstream, monkeypatch):
    folder, procs = servers
    client = procs["main"].client()
    question = "What is the capital of France?"
    answer = _chat(client, question, temperature=0.9)
    proof = answer.model_extra["a2c"]
    assert answer.choices[0].message.content == (proof["answer"] or answer.choices[0].message.content)
    assert answer.choices[0].finish_reason == "stop" and answer.model == DEFAULT_MODEL
    assert len(proof["candidates"]) == 2 - len(proof["failed_paraphrases"])  # 1 paraphrase + 1 temperature
    assert {c["source"] for c in proof["choices"]} <= {c["source"] for c in proof["candidates"]}
    assert set(proof["consistency"]) == {"paraphrase", "temperature"}
    assert proof["model_calls"] >= 6 and proof["batch"]["model_calls"] == proof["model_calls"]
    assert answer.usage.total_tokens == proof["tokens"]["prompt"] + proof["tokens"]["completion"] > 0
    assert proof["ignored"] == ["temperature"] and proof["settings"]["variation"]["temperatures"] == [0.5]

    # AskToChoose over the same upstream asks exactly the prompts the server asked: all served by the cache
    monkeypatch.setenv("A2C_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
    generator = build_generator(GeneratorConfig(
        backend="openai", model=DEFAULT_MODEL, base_urls=upstream.base_url,
        api_key_env="A2C_TEST_UPSTREAM_KEY", cache=folder / "cache.sqlite"))
    chooser = AskToChoose(generator, techniques=DEFAULT_TECHNIQUES[:1], temperatures=(0.5,))
    small = answer_settings(SMALL, "")
    chooser.config = chooser.config.model_copy(update={"variation": small.variation,
                                                       "ask_to_choose": small.ask_to_choose})
    expected = chooser.answer(question)
    assert generator.stats.generated == 0 and generator.stats.cached > 0
    assert proof["answer"] == expected.answer
    assert [c["answer"] for c in proof["candidates"]] == expected.candidates

    # the same question and seed as a completion, streamed: the cache answers, the answer is the same
    stream = client.completions.create(model=DEFAULT_MODEL, prompt=question, stream=True)
    chunks = list(stream)
    assert [c.choices[0].text for c in chunks] == [answer.choices[0].message.content, ""]
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["a2c"]["tokens"]["cached_samples"] > 0
    assert chunks[-1].model_extra["a2c"]["model_calls"] == 0
    SEEN.extend(c.model_dump_json() for c in chunks)


@pytest.mark.slow
def test_extra_body_overrides_and_refusals(servers):
    client = servers[1]["main"].client()
    # the Ask-to-Choose section by its earlier name, `a2c`, is still read
    hotter = _chat(client, "What is the capital of France?",
                   extra_body={"a2c": {"variation": {"temperatures": [1.0]}, "a2c": {"idk_text": "No idea"}}})
    proof = hotter.model_extra["a2c"]
    assert [c["temperature"] for c in proof["candidates"] if c["source"] == "temperature"] == [1.0]
    assert proof["settings"]["ask_to_choose"]["idk_text"] == "No idea"
    assert proof["settings"]["variation"]["techniques"] == ["synonyms"]  # the server's, kept

    unknown = _error(lambda: _chat(client, "Why?", extra_body={"a2c": {"variation": {"temps": [1.0]}}}))
    assert unknown.status_code == 400 and unknown.param == "a2c.variation.temps"
    assert unknown.body["message"].startswith("a2c.variation.temps: a request may not set this; it may set "
                                              "techniques, paraphrase_temperature, temperatures")
    for options, param in (({"n": 2}, "n"),
                           ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
                            "tools"),
                           ({"response_format": {"type": "json_object"}}, "response_format")):
        refused = _error(lambda options=options: _chat(client, "Why?", **options))
        assert refused.status_code == 400 and refused.param == param
        assert refused.body["type"] == "invalid_request_error"
        assert refused.body["code"] == "unsupported_parameter"


@pytest.mark.slow
def test_401_413_models_and_ready(servers):
    main_proc = servers[1]["main"]
    refused = _error(lambda: main_proc.client("wrong-key").models.list())
    assert refused.status_code == 401 and refused.code == "invalid_api_key"
    assert refused.response.headers["www-authenticate"] == "Bearer"
    keyless = httpx.post(f"{main_proc.url}/v1/chat/completions", json={"messages": []}, timeout=30)  # no key
    assert keyless.status_code == 401 and keyless.json()["error"]["code"] == "invalid_api_key"
    assert [m.id for m in main_proc.client().models.list()] == [DEFAULT_MODEL]
    too_large = _error(lambda: _chat(main_proc.client(), "x" * 5000))
    assert too_large.status_code == 413 and too_large.code == "request_too_large"
    assert "4096 bytes" in too_large.body["message"]
    ready = httpx.get(f"{main_proc.url}/ready", timeout=30)
    assert ready.status_code == 200 and ready.json()["upstreams"][0]["ok"] is True


@pytest.mark.slow
def test_429_while_busy_then_sigterm_drains_the_request_in_flight(servers):
    proc = servers[1]["drain"]
    outcome: dict[str, Any] = {}

    def ask():
        outcome["answer"] = _chat(proc.client(), "Which planet is the largest?")

    worker = threading.Thread(target=ask)
    worker.start()
    deadline = time.monotonic() + 60
    while proc.pending() < 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    busy = _error(lambda: _chat(proc.client(), "Which ocean is the largest?"))
    assert busy.status_code == 429 and busy.code == "queue_full" and busy.type == "rate_limit_error"
    assert int(busy.response.headers["retry-after"]) >= 1
    proc.proc.send_signal(signal.SIGTERM)
    worker.join(300)
    assert outcome["answer"].choices[0].message.content.strip()
    assert proc.proc.wait(60) == 0
    log = proc.log.read_text()
    assert "POST /v1/chat/completions 429" in log and "POST /v1/chat/completions 200" in log
    assert log.rstrip().endswith("a2c serve: stopped")


@pytest.mark.slow
def test_504_says_what_was_done(servers):
    client = servers[1]["deadline"].client()
    late = _error(lambda: _chat(client, "Which metal melts at the lowest temperature?"))
    assert late.status_code == 504 and late.code == "deadline_exceeded" and late.type == "timeout_error"
    assert late.body["a2c"]["state"] == "running" and late.body["a2c"]["batch_questions"] == 1
    assert "0.5 s" in late.body["message"]


@pytest.mark.slow
def test_502_carries_the_upstreams_message_with_keys_masked(servers):
    procs = servers[1]
    refused = _error(lambda: _chat(procs["refused"].client(), "Why is the sea salty?"))
    assert (refused.status_code, refused.code, refused.type) == (502, "upstream_failed", "upstream_error")
    assert "ConnectError" in refused.body["message"]
    echoed = _error(lambda: _chat(procs["echo"].client(), "Why is the sea salty?"))
    assert echoed.status_code == 502 and "model not found" in echoed.body["message"]
    assert "Bearer ***" in echoed.body["message"]
    ready = httpx.get(f"{procs['refused'].url}/ready", timeout=30)
    assert ready.status_code == 503 and ready.json()["upstreams"][0]["ok"] is False


@pytest.mark.slow
def test_the_upstream_key_is_in_no_log_line_response_or_cache_file(servers):
    folder, procs = servers
    SEEN.append(httpx.get(f"{procs['echo'].url}/ready", timeout=30).text)  # quotes no key either
    assert SEEN, "run with the other serve tests: they collect the responses"
    for text in SEEN:
        assert UPSTREAM_KEY not in text
    for path in folder.iterdir():  # the access logs and the request cache (with its WAL)
        assert UPSTREAM_KEY.encode() not in path.read_bytes(), path.name
    main_log = (folder / "main.log").read_text()
    assert "What is the capital of France?" not in main_log  # no request text without --log-requests
    access = [line for line in main_log.splitlines() if " /v1/" in line]
    assert access and all(re.fullmatch(r"\S+ \S+ (GET|POST) /v1/\S+ \d{3} \d+ ms model_calls=\d+", line)
                          for line in access)


def test_a_typo_in_a_request_setting_gets_a_did_you_mean():
    defaults = answer_settings({}, "")
    with pytest.raises(SettingsError) as typo:
        override(defaults, {"variation": {"temperatrues": [1.0]}})
    assert str(typo.value).startswith("a2c.variation.temperatrues: a request may not set this; it may set")
    assert "(did you mean 'temperatures'?)" in str(typo.value)
    with pytest.raises(SettingsError) as far:
        override(defaults, {"variation": {"zzz": 1}})
    assert "did you mean" not in str(far.value)
