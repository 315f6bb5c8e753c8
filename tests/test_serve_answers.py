"""What `a2c serve` answers when a request names a model it does not serve, and when the model's own choice
is the rank prompts' "don't know" option.

A model name the server does not serve is refused as OpenAI refuses one (404 `model_not_found`, naming the
ids `GET /v1/models` lists), never answered by the served model under another name; `--model-alias` names
the exceptions. A "don't know" win is served as the option's text and marked `a2c.dont_know: true`. The
`scripted:2` model forces that win: its one candidate is "2", so the rank prompt lists one option and its
reply "2" names option 2, "don't know" (what SmolLM2 did for "How many legs does a spider have?").
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2c.cli import build_parser
from a2c.cli.serve import serve_config
from a2c.common.errors import RenamedKeyWarning
from a2c.llm import GeneratorConfig, build_generator
from a2c.qa.idk import DEFAULT_IDK_TEXT
from a2c.serve.app import build_state, create_app
from a2c.serve.config import ServeConfigError, build_serve_config, read_serve_file, with_calibration
from tests.serve_process import CLIENT_KEY, SMALL, ServeProcess
from tests.test_serve import SETTINGS, against, chat
from tests.test_serve_calibration import calibration

DONT_KNOW = "scripted:2"  # every candidate "2", every rank reply "2": the "don't know" option wins
SPIDER = "How many legs does a spider have?"
ROOT = Path(__file__).resolve().parents[1]


def app_of(model: str, **server: Any):
    generator = {"backend": "scripted", "model": model}
    config = build_serve_config(SETTINGS, generator, {"batch_window": 0.0, **server})
    state = build_state(config, build_generator(GeneratorConfig(**generator, cache=None)), api_key=None)
    return create_app(state)


def ask(app, *bodies: dict[str, Any], path: str = "/v1/chat/completions") -> list[httpx.Response]:
    async def scenario(client: httpx.AsyncClient) -> list[httpx.Response]:
        return [await client.post(path, json=body) for body in bodies]

    return against(app, scenario)


# -- a real a2c serve process ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    folder = tmp_path_factory.mktemp("serve-answers")
    (folder / "serve.yaml").write_text(json.dumps(SMALL))  # JSON is YAML
    proc = ServeProcess(folder, "serve", "--backend", "scripted", "--model", DONT_KNOW, "--config",
                        str(folder / "serve.yaml"), "--batch-window", "0",
                        env={"A2C_SERVE_API_KEY": CLIENT_KEY})
    try:
        proc.wait_healthy()
        yield proc
    finally:
        proc.stop()


def _model_calls(proc: ServeProcess) -> int:
    return int(httpx.get(f"{proc.url}/health", timeout=10).json()["model_calls"])


@pytest.mark.slow
def test_a_model_it_does_not_serve_is_a_404_model_not_found_naming_the_served_id(served):
    import openai

    client = served.client()
    listed = [m.id for m in client.models.list()]
    assert listed == [DONT_KNOW]
    before = _model_calls(served)
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": SPIDER}])
    error = caught.value
    assert error.status_code == 404 and error.code == "model_not_found" and error.param == "model"
    assert "`gpt-4o` is not served here" in error.message
    assert all(f"`{model}`" in error.message for model in listed) and "--model-alias" in error.message
    with pytest.raises(openai.NotFoundError) as legacy:  # the completions route refuses it alike
        client.completions.create(model="gpt-3.5-turbo-instruct", prompt=SPIDER)
    assert legacy.value.code == "model_not_found"
    assert _model_calls(served) == before  # refused before any model call
    assert re.search(r"POST /v1/chat/completions 404 \d+ ms model_calls=0", served.log.read_text())


@pytest.mark.slow
def test_the_served_id_gets_a_200_and_a_dont_know_win_is_the_option_marked_dont_know(served):
    client = served.client()
    reply = client.chat.completions.create(model=DONT_KNOW, messages=[{"role": "user", "content": SPIDER}])
    proof = reply.model_extra["a2c"]
    assert reply.model == DONT_KNOW and reply.choices[0].finish_reason == "stop"
    assert reply.choices[0].message.content == DEFAULT_IDK_TEXT
    assert proof["dont_know"] is True and proof["selected_by"] == "vote" and proof["vote_share"] == 1.0
    assert proof["answer"] == DEFAULT_IDK_TEXT
    assert all(c["option"] == len(c["options"]) for c in proof["choices"])  # every reply took the last one
    # the option's words are a setting: per request here (`ask_to_choose.idk_text`), or in the serve config
    worded = client.chat.completions.create(
        model=DONT_KNOW, messages=[{"role": "user", "content": SPIDER}],
        extra_body={"a2c": {"ask_to_choose": {"idk_text": "I don't know."}}})
    assert worded.choices[0].message.content == "I don't know."
    assert worded.model_extra["a2c"]["dont_know"] is True
    # streamed, the final chunk's `a2c` carries the mark
    chunks = list(client.completions.create(model=DONT_KNOW, prompt=SPIDER, stream=True))
    assert chunks[0].choices[0].text == DEFAULT_IDK_TEXT
    assert chunks[-1].model_extra["a2c"]["dont_know"] is True


@pytest.mark.slow
def test_a_request_without_a_model_is_answered_by_the_served_one(served):
    response = httpx.post(f"{served.url}/v1/chat/completions", timeout=60,
                          headers={"Authorization": f"Bearer {CLIENT_KEY}"},
                          json={"messages": [{"role": "user", "content": SPIDER}]})
    assert response.status_code == 200, response.text
    assert response.json()["model"] == DONT_KNOW


# -- in process (the tests' scripted backend) ---------------------------------------------------------------

def test_an_answer_that_is_not_dont_know_is_marked_false():
    (response,) = ask(app_of("scripted:3"), {**chat(SPIDER), "model": "scripted:3"})
    body = response.json()
    assert response.status_code == 200
    assert body["choices"][0]["message"]["content"] == "3" and body["a2c"]["dont_know"] is False


def test_a_model_alias_is_answered_by_the_served_model_and_listed():
    app = app_of("scripted", model_aliases=("gpt-4o",))
    alias, other = ask(app, {**chat(SPIDER), "model": "gpt-4o"}, {**chat(SPIDER), "model": "claude"})
    assert alias.status_code == 200 and alias.json()["model"] == "scripted"  # what really answered
    assert other.status_code == 404
    assert other.json()["error"]["code"] == "model_not_found"
    assert "`scripted`, `gpt-4o`" in other.json()["error"]["message"]

    async def models(client: httpx.AsyncClient) -> httpx.Response:
        return await client.get("/v1/models")

    assert [m["id"] for m in against(app, models).json()["data"]] == ["scripted", "gpt-4o"]


def test_the_wildcard_alias_takes_any_name():
    (response,) = ask(app_of("scripted", model_aliases=("*",)), {**chat(SPIDER), "model": "any/model:7b"},
                      path="/v1/chat/completions")
    assert response.status_code == 200 and response.json()["model"] == "scripted"


def test_the_alias_flag_reaches_the_config_and_a_blank_alias_is_refused():
    args = build_parser().parse_args(["serve", "--backend", "scripted", "--model-alias", "gpt-4o",
                                      "--model-alias", "gpt-4o-mini"])
    assert serve_config(args).server.model_aliases == ("gpt-4o", "gpt-4o-mini")
    with pytest.raises(ServeConfigError, match="model_aliases"):
        build_serve_config({}, {"backend": "scripted", "model": "scripted"}, {"model_aliases": ["\u200b"]})


def test_a_calibrated_dont_know_answer_is_marked_too():
    generator = {"backend": "scripted", "model": DONT_KNOW}
    config = build_serve_config(SETTINGS, generator, {"batch_window": 0.0})
    config = with_calibration(config, calibration(model=DONT_KNOW), None, "test")
    app = create_app(build_state(config, build_generator(GeneratorConfig(**generator, cache=None)),
                                 api_key=None))
    (response,) = ask(app, {**chat(SPIDER), "model": DONT_KNOW})
    body = response.json()
    assert body["a2c"]["selected_by"] == "calibrated_source" and body["a2c"]["calibrated"]["source"] == \
        "temperature"
    assert body["choices"][0]["message"]["content"] == DEFAULT_IDK_TEXT and body["a2c"]["dont_know"] is True


def test_the_serve_example_loads_without_a_deprecation_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RenamedKeyWarning)
        file = read_serve_file(ROOT / "examples" / "serve.yaml")
        config = build_serve_config(file, {"backend": "scripted", "model": "scripted"}, {})
    assert "a2c" not in file and "ask_to_choose" in file
    assert config.defaults.ask_to_choose.idk_text == DEFAULT_IDK_TEXT


def test_the_old_a2c_key_in_a_serve_file_is_read_with_a_warning(tmp_path):
    old = tmp_path / "serve.yaml"
    old.write_text("a2c:\n  max_tokens: 5\n")
    with pytest.warns(RenamedKeyWarning, match="write `ask_to_choose:`"):
        file = read_serve_file(old)
    assert build_serve_config(file, {"backend": "scripted", "model": "scripted"}, {}) \
        .defaults.ask_to_choose.max_tokens == 5
