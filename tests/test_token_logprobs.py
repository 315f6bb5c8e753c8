"""The chosen token's log-probability per position (`Completion.token_logprobs`) from every backend, its
top-k beside it, and how both are cached: each backend's conversion on hand-made replies, hostile
servers, the cache's round trip, key and entries written before the field existed."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pytest

from a2c.llm import CachedGenerator, GenerationRequest, GeneratorConfig, Message
from a2c.llm.base import Completion
from a2c.llm.logprobs import chosen, texts, top_k, with_chosen
from a2c.llm.openai_backend import OpenAIBackend, read_logprobs
from a2c.llm.sampling import SampleResult, request_key
from a2c.llm.scripted import ScriptedBackend, spread_logprobs
from a2c.llm.vllm_backend import read_logprobs as read_vllm_logprobs
from a2c.system.cache import Cache, CacheError
from tests.fake_openai import SlowServer

QUESTION = (Message("user", "Name a colour of the rainbow."),)


# -- the shared checks ---------------------------------------------------------------------------------


def test_a_list_with_one_bad_position_is_dropped_whole():
    assert chosen([-0.5, -1.25, 0]) == [-0.5, -1.25, 0.0]
    assert chosen([-0.5, -math.inf]) == [-0.5, -math.inf]  # a token the model rules out is a real value
    for bad in (None, [], [-0.5, None], [-0.5, math.nan], [-0.5, "x"], [True], [0.5], [math.inf], {"a": -1}):
        assert chosen(bad) is None, bad


def test_texts_must_be_strings_of_the_right_count():
    assert texts(["a", "b"], 2) == ["a", "b"]
    assert texts(["a", "b"], 3) is None and texts(["a", 1], 2) is None and texts(None, 0) is None
    assert texts(["a"], None) is None


def test_top_k_is_none_for_k_zero_and_for_bad_positions():
    steps = [{"a": -0.1, "b": -2.5}]
    assert top_k(steps, 2) == steps
    assert top_k(steps, 0) is None and top_k(steps, None) is None
    assert top_k([{"a": math.nan}], 2) is None and top_k([None], 2) is None and top_k("x", 2) is None
    assert top_k([{None: -1.0}], 2) is None and top_k([{}], 2) is None


def test_the_chosen_token_joins_a_top_k_that_left_it_out():
    top = [{"a": -0.1, "b": -2.5}, {"c": -0.2}]
    assert with_chosen(top, ["z", "c"], [-4.0, -0.2]) == [{"a": -0.1, "b": -2.5, "z": -4.0}, {"c": -0.2}]
    assert with_chosen(top, None, None) == top
    assert with_chosen(top, ["z"], [-4.0]) == top  # counts disagree: nothing placed


def test_a_negative_logprobs_count_is_refused():
    with pytest.raises(ValueError, match="logprobs must be None or >= 0"):
        GenerationRequest(prompt="x", logprobs=-1)


# -- openai: chat and completions shapes ---------------------------------------------------------------


def _chat_step(token: str, logprob: float, alternatives: dict[str, float]) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": None,
            "top_logprobs": [{"token": t, "logprob": v, "bytes": None} for t, v in alternatives.items()]}


def test_chat_logprobs_keep_the_sampled_token_outside_the_top_k():
    raw = {"content": [_chat_step("Red", -0.3, {"Red": -0.3, "Blue": -1.9}),
                       _chat_step(" sky", -5.5, {".": -0.1, "!": -2.4})]}  # sampled, not among the top 2
    top, tokens, values = read_logprobs(raw, chat=True, k=2)
    assert tokens == ["Red", " sky"] and values == [-0.3, -5.5]
    assert top == [{"Red": -0.3, "Blue": -1.9}, {".": -0.1, "!": -2.4, " sky": -5.5}]
    top0, tokens0, values0 = read_logprobs(raw, chat=True, k=0)
    assert top0 is None and tokens0 == tokens and values0 == values


def test_completions_logprobs_read_the_parallel_lists():
    raw = {"tokens": [" Paris", "."], "token_logprobs": [-0.02, -3.0], "text_offset": [0, 6],
           "top_logprobs": [{" Paris": -0.02, " Lyon": -4.1}, {",": -0.4}]}
    top, tokens, values = read_logprobs(raw, chat=False, k=1)
    assert tokens == [" Paris", "."] and values == [-0.02, -3.0]
    assert top == [{" Paris": -0.02, " Lyon": -4.1}, {",": -0.4, ".": -3.0}]


@pytest.mark.parametrize("raw", [
    None, {}, [], "logprobs", {"content": None}, {"content": [None]}, {"content": [{"token": "a"}]},
    {"content": [{"token": "a", "logprob": math.nan}]}, {"content": [{"token": 3, "logprob": -1.0}]},
    {"content": [{"token": "a", "logprob": "-1"}]},
])
def test_chat_logprobs_a_server_got_wrong_are_none(raw):
    _, tokens, values = read_logprobs(raw, chat=True, k=2)
    assert tokens is None and values is None


@pytest.mark.parametrize("raw", [
    {"tokens": ["a", "b"], "token_logprobs": [None, -1.0]},  # `echo` servers send null for the first
    {"tokens": ["a"], "token_logprobs": [-1.0, -2.0]},
    {"tokens": None, "token_logprobs": [-1.0]},
    {"token_logprobs": [math.nan]},
])
def test_completions_logprobs_a_server_got_wrong_are_none(raw):
    _, tokens, values = read_logprobs(raw, chat=False, k=2)
    assert tokens is None and values is None


def _openai(server: SlowServer, endpoint: str = "chat") -> CachedGenerator:
    config = GeneratorConfig(backend="openai", base_urls=[server.url], cache=None, endpoint=endpoint,
                             max_retries=0)
    from a2c.system.cache import NoCache

    return CachedGenerator(OpenAIBackend(config), NoCache())


@pytest.mark.parametrize("choice", [{}, {"logprobs": None}, {"logprobs": {"content": None}},
                                    {"logprobs": {"content": [{"token": "A", "logprob": math.nan}]}}])
def test_a_server_that_sends_no_logprobs_when_asked_gives_none(choice):
    server = SlowServer()
    try:
        server.choice = choice
        request = GenerationRequest(messages=QUESTION, logprobs=3)
        answer = _openai(server).generate([request])[0].completions[0]
        assert server.arrived[0]["logprobs"] is True and server.arrived[0]["top_logprobs"] == 3
    finally:
        server.stop()
    assert answer.text == "Answer 0." and answer.token_logprobs is None and answer.tokens is None
    assert answer.logprobs is None


def test_the_completions_endpoint_over_http_fills_the_chosen_tokens():
    server = SlowServer()
    try:
        server.choice = {"text": " Red.",
                         "logprobs": {"tokens": [" Red", "."], "token_logprobs": [-0.5, -0.25],
                                      "top_logprobs": [{" Red": -0.5}, {".": -0.25}]}}
        answer = _openai(server, "completions").generate(
            [GenerationRequest(prompt="A colour:", logprobs=0)])[0].completions[0]
        assert server.arrived[0]["logprobs"] == 0
    finally:
        server.stop()
    assert answer.text == " Red." and answer.tokens == [" Red", "."]
    assert answer.token_logprobs == [-0.5, -0.25]
    assert answer.logprobs is None  # k = 0: the chosen tokens only


# -- scripted --------------------------------------------------------------------------------------------


def _scripted(model: str, cache: Cache | None = None) -> CachedGenerator:
    from a2c.system.cache import NoCache

    return CachedGenerator(ScriptedBackend(model), cache if cache is not None else NoCache())


def test_scripted_gives_its_reply_the_mass_its_top_k_gives_it():
    gen = _scripted("scripted-spread:a|b|c")
    request = GenerationRequest(prompt="Q1?", logprobs=3)
    answer = gen.generate([request])[0].completions[0]
    spread = spread_logprobs(request, answer.text, ["a", "b", "c"])
    assert answer.tokens == [answer.text] and answer.token_logprobs == [spread[answer.text]] < [0.0]
    assert answer.logprobs == [spread]
    sure = _scripted("scripted").generate([GenerationRequest(prompt="Q1?", logprobs=0)])[0].completions[0]
    assert sure.token_logprobs == [0.0] and sure.tokens == [sure.text] and sure.logprobs is None
    plain = _scripted("scripted").generate([GenerationRequest(prompt="Q1?")])[0].completions[0]
    assert plain.token_logprobs is None and plain.tokens is None and plain.logprobs is None


# -- vllm: CompletionOutput.logprobs, built by hand in vLLM's shape ----------------------------------------


@dataclass
class Logprob:  # vllm.sequence.Logprob's fields
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


def test_vllm_logprobs_are_read_at_the_sampled_token_ids():
    steps = [{5: Logprob(-0.1, 1, " Paris"), 9: Logprob(-2.6, 2, " Lyon")},
             {7: Logprob(-0.3, 1, "."), 8: Logprob(-1.5, 2, "!"), 11: Logprob(-6.0, 40, " and")}]
    top, tokens, values = read_vllm_logprobs(steps, [5, 11], 2)
    assert tokens == [" Paris", " and"] and values == [-0.1, -6.0]  # the second was sampled from the tail
    assert top == [{" Paris": -0.1, " Lyon": -2.6}, {".": -0.3, "!": -1.5, " and": -6.0}]
    top0, tokens0, values0 = read_vllm_logprobs([{5: Logprob(-0.1, 1, " Paris")}], [5], 0)
    assert top0 is None and tokens0 == [" Paris"] and values0 == [-0.1]


def test_vllm_ids_with_one_text_share_their_mass():
    quarter = math.log(0.25)
    step = {1: Logprob(quarter, 1, "Yes"), 2: Logprob(quarter, 2, "Yes")}
    top, _, values = read_vllm_logprobs([step], [2], 2)
    assert top is not None and top[0]["Yes"] == pytest.approx(math.log(0.5))
    assert values == [math.log(0.25)]  # the sampled id's own


@pytest.mark.parametrize(("steps", "ids"), [
    ([{5: Logprob(-0.1, 1, "a")}], [6]),  # the sampled id is not there
    ([{5: Logprob(-0.1, 1, "a")}], [5, 6]),  # fewer positions than tokens
    ([{5: Logprob(math.nan, 1, "a")}], [5]),
    ([None], [5]),
])
def test_vllm_logprobs_without_the_sampled_token_are_none(steps, ids):
    _, tokens, values = read_vllm_logprobs(steps, ids, 1)
    assert tokens is None and values is None


def test_vllm_logprobs_not_detokenized_keep_the_values_only():
    top, tokens, values = read_vllm_logprobs([{5: Logprob(-0.1, 1, None)}], [5], 1)
    assert values == [-0.1] and tokens is None and top == [{"5": -0.1}]
    assert read_vllm_logprobs(None, [5], 1) == (None, None, None)


def test_the_vllm_backend_asks_for_k_and_fills_each_sample(monkeypatch):
    import sys
    import types

    from tests import test_vllm_seeds as stand_in

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(SamplingParams=stand_in.Params))
    backend = stand_in._backend("cuda")

    def generate(prompts: list[Any], params: list[Any], use_tqdm: bool) -> list[Any]:
        backend.llm.asked += params
        step = {5: Logprob(-0.25, 1, " Paris"), 6: Logprob(-1.5, 2, " Rome")}
        sample = types.SimpleNamespace(text=" Paris", finish_reason="length", token_ids=[5], logprobs=[step])
        return [types.SimpleNamespace(prompt_token_ids=[1], outputs=[sample]) for _ in params]

    monkeypatch.setattr(backend.llm, "generate", generate)
    out = CachedGenerator(backend).generate([GenerationRequest(prompt="The capital of France is", logprobs=k)
                                             for k in (0, 1)])
    assert [p.fields["logprobs"] for p in backend.llm.asked] == [0, 1]
    assert [g.completions[0].token_logprobs for g in out] == [[-0.25], [-0.25]]
    assert [g.completions[0].logprobs for g in out] == [None, [{" Paris": -0.25, " Rome": -1.5}]]


# -- transformers: the raw distribution at each generated position -----------------------------------------


class _Tokenizer:
    def decode(self, ids: list[int]) -> str:
        return "".join("Yes" if i in (1, 2) else f"<{i}>" for i in ids)


def test_transformers_reads_the_raw_logits_of_each_row():
    torch = pytest.importorskip("torch")
    from a2c.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend.__new__(TransformersBackend)  # no model: the conversion alone
    backend.tokenizer = _Tokenizer()
    logits = [torch.tensor([[0.0, 1.0, 1.0, 3.0], [5.0, 0.0, 0.0, 0.0]]),
              torch.tensor([[2.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 9.0]])]  # steps × (rows × vocabulary)
    top, tokens, values = backend._logprobs(logits, 0, [3, 1], 1)
    first = torch.log_softmax(logits[0][0], dim=-1)
    second = torch.log_softmax(logits[1][0], dim=-1)
    assert tokens == ["<3>", "Yes"] and values == pytest.approx([first[3].item(), second[1].item()])
    assert top is not None and top[0] == pytest.approx({"<3>": first[3].item()})
    assert top[1] == pytest.approx({"<0>": second[0].item(), "Yes": second[1].item()})  # the top-1 and id 1
    # within the top 3, ids 1 and 2 both read "Yes": one entry with both ids' mass
    top3, _, _ = backend._logprobs(logits, 0, [3, 1], 3)
    assert top3 is not None and top3[1]["Yes"] == pytest.approx(math.log(2 * math.exp(second[1].item())))
    top0, _, values0 = backend._logprobs(logits, 1, [0], 0)
    assert top0 is None and values0 == pytest.approx([torch.log_softmax(logits[0][1], dim=-1)[0].item()])


@pytest.mark.slow
def test_transformers_token_logprobs_are_the_models_own_at_temperature_one(smollm2):
    torch = pytest.importorskip("torch")
    request = GenerationRequest(prompt="The capital of France is", temperature=0.7, seed=3, max_tokens=6,
                                logprobs=2)
    answer = smollm2.generate([request])[0].completions[0]
    assert answer.token_logprobs is not None and answer.tokens is not None and answer.logprobs is not None
    assert len(answer.token_logprobs) == len(answer.tokens) == len(answer.logprobs)
    assert len(answer.tokens) == answer.completion_tokens
    # teacher-forced: the same tokens through the model, log_softmax of its raw logits (no temperature)
    impl = smollm2.impl
    tok = impl.tokenizer
    prompt = tok(request.prompt, add_special_tokens=impl.family.add_special_tokens)["input_ids"]
    generated = tok.convert_tokens_to_ids(tok.tokenize("".join(answer.tokens)))
    ids = [tok.convert_tokens_to_ids(tok.tokenize(t))[0] for t in answer.tokens]
    assert generated == ids  # each piece is one token
    with torch.inference_mode():
        logits = impl.lm(torch.tensor([prompt + ids])).logits[0].float()
    expected = [torch.log_softmax(logits[len(prompt) - 1 + i], dim=-1)[t].item() for i, t in enumerate(ids)]
    assert answer.token_logprobs == pytest.approx(expected, abs=1e-3)


# -- the request cache -------------------------------------------------------------------------------------


def test_the_cache_serves_the_exact_values_again(tmp_path):
    with Cache(tmp_path / "cache.sqlite") as cache:
        gen = _scripted("scripted-spread:a|b|c", cache)
        requests = [GenerationRequest(prompt=f"Q{i}?", logprobs=3) for i in range(4)]
        first = gen.generate(requests)
        again = _scripted("scripted-spread:a|b|c", cache).generate(requests)
    assert all(g.cached == [True] for g in again)
    assert [g.completions[0] for g in again] == [g.completions[0] for g in first]
    assert all(g.completions[0].token_logprobs for g in again)


def test_the_key_says_whether_and_how_many_logprobs_were_asked():
    keys = {request_key("scripted", "scripted", GenerationRequest(prompt="Q?", logprobs=k), 0)
            for k in (None, 0, 1, 5)}
    assert len(keys) == 4


def _stored(cache: Cache, request: GenerationRequest) -> dict[str, Any]:
    value = cache.get(request_key("scripted", "scripted", request, 0))
    assert isinstance(value, dict)
    return value


def test_an_entry_from_before_token_logprobs_is_drawn_again_for_a_request_asking_for_them(tmp_path):
    asking = GenerationRequest(prompt="Q1?", logprobs=2)
    plain = GenerationRequest(prompt="Q2?")
    old = {"text": "from before", "finish_reason": "stop", "completion_tokens": 1,
           "logprobs": [{"from before": 0.0}], "prompt_tokens": 1}  # what earlier releases stored
    with Cache(tmp_path / "cache.sqlite") as cache:
        cache.put(request_key("scripted", "scripted", asking, 0), old)
        cache.put(request_key("scripted", "scripted", plain, 0), {**old, "logprobs": None})
        fresh, kept = _scripted("scripted", cache).generate([asking, plain])
        assert fresh.cached == [False] and fresh.text != "from before"
        assert fresh.completions[0].token_logprobs == [0.0]
        assert kept.cached == [True] and kept.text == "from before"  # asked for none: served as before
        assert _stored(cache, asking)["token_logprobs"] == [0.0]  # overwritten in the new form
        assert _scripted("scripted", cache).generate([asking])[0].cached == [True]


def test_an_answer_without_logprobs_from_the_backend_is_served_again(tmp_path):
    server = SlowServer()
    try:
        with Cache(tmp_path / "cache.sqlite") as cache:
            config = GeneratorConfig(backend="openai", base_urls=[server.url], cache=None, max_retries=0)
            request = GenerationRequest(messages=QUESTION, logprobs=1)
            first = CachedGenerator(OpenAIBackend(config), cache).generate([request])[0]
            again = CachedGenerator(OpenAIBackend(config), cache).generate([request])[0]
    finally:
        server.stop()
    assert first.completions[0].token_logprobs is None and again.cached == [True]
    assert len(server.arrived) == 1


def test_entries_not_asking_for_logprobs_keep_their_old_form(tmp_path):
    with Cache(tmp_path / "cache.sqlite") as cache:
        _scripted("scripted", cache).generate([GenerationRequest(prompt="Q?")])
        stored = _stored(cache, GenerationRequest(prompt="Q?"))
    assert set(stored) == {"text", "finish_reason", "completion_tokens", "logprobs", "prompt_tokens"}


def test_a_damaged_token_logprobs_entry_names_the_cache_file(tmp_path):
    request = GenerationRequest(prompt="Q?", logprobs=1)
    path = tmp_path / "cache.sqlite"
    with Cache(path) as cache:
        cache.put(request_key("scripted", "scripted", request, 0),
                  {"text": "x", "finish_reason": "stop", "completion_tokens": 1, "logprobs": None,
                   "token_logprobs": ["-0.5"], "tokens": ["x"], "prompt_tokens": 1})
        with pytest.raises(CacheError, match=r"cache\.sqlite: .*token_logprobs is not a list of numbers"):
            _scripted("scripted", cache).generate([request])


def test_a_completion_round_trips_through_the_stored_form():
    from a2c.llm.sampling import _from_json, _to_json

    completion = Completion("Red.", "stop", 2, [{"Red": -0.1, "Blue": -2.0}, {".": -1e-9}],
                            token_logprobs=[-0.1000000000000000055511151231257827, -1e-9],
                            tokens=["Red", "."])
    stored = json.loads(json.dumps(_to_json(SampleResult(completion, 7)), separators=(",", ":")))
    assert _from_json(stored, None) == SampleResult(completion, 7)  # floats exactly as they were


# -- a real OpenAI-compatible server -----------------------------------------------------------------------


@pytest.mark.slow
def test_llama_cpp_chat_and_completions_give_the_chosen_tokens(llama_server):
    config = GeneratorConfig(backend="openai", base_urls=[llama_server.base_url], cache=None)
    from a2c.system.cache import NoCache

    gen = CachedGenerator(OpenAIBackend(config), NoCache())
    chat, raw, sampled = gen.generate([
        GenerationRequest(messages=QUESTION, max_tokens=6, logprobs=2),
        GenerationRequest(prompt="The capital of France is", max_tokens=6, logprobs=2),
        GenerationRequest(prompt="My favourite animal is the", temperature=1.0, seed=3, max_tokens=6,
                          logprobs=0),
    ])
    for generation in (chat, raw, sampled):
        answer = generation.completions[0]
        assert answer.token_logprobs is not None and answer.tokens is not None, generation.request
        assert len(answer.token_logprobs) == len(answer.tokens) == answer.completion_tokens
        assert all(v <= 0 for v in answer.token_logprobs)
        assert "".join(answer.tokens).strip() == answer.text.strip()
    for generation in (chat, raw):  # top-2 plus the chosen token, whose value is the same in both
        answer = generation.completions[0]
        assert answer.logprobs is not None and answer.tokens is not None and answer.token_logprobs is not None
        assert all(step[t] == pytest.approx(v) for step, t, v in
                   zip(answer.logprobs, answer.tokens, answer.token_logprobs, strict=True))
    assert sampled.completions[0].logprobs is None


# -- inspect: a model's ModelOutput ------------------------------------------------------------------------


def test_inspect_outputs_give_the_chosen_tokens():
    pytest.importorskip("inspect_ai")
    from inspect_ai.model import Logprob as InspectLogprob
    from inspect_ai.model import Logprobs, ModelOutput, TopLogprob

    from a2c.inspect.generator import completion_of

    output = ModelOutput.from_content(model="mockllm/model", content="Red.")
    output.choices[0].logprobs = Logprobs(content=[
        InspectLogprob(token="Red", logprob=-0.5, top_logprobs=[TopLogprob(token="Red", logprob=-0.5)]),
        InspectLogprob(token=".", logprob=-0.125)])
    answer = completion_of(output)
    assert answer.tokens == ["Red", "."] and answer.token_logprobs == [-0.5, -0.125]
    assert answer.logprobs == [{"Red": -0.5}, {".": -0.125}] and completion_of(output, 0).logprobs is None
    plain = ModelOutput.from_content(model="mockllm/model", content="Red.")
    assert completion_of(plain).token_logprobs is None
