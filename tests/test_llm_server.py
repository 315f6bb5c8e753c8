"""What a server says about itself: `a2c run` checks every base URL before the first stage, and the request
cache keys answers by the model behind the name (vLLM's `root`, llama.cpp's `meta`), read once per
generator: replicas of one model share entries, another model under the same name misses, and a server
that says nothing beyond the name keeps the keys a2c made before."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import pytest

from a2c.cli import main
from a2c.cli.run import served_generators
from a2c.llm import CachedGenerator, GenerationRequest, GeneratorConfig, Message
from a2c.llm.openai_backend import BackendError, OpenAIBackend
from a2c.llm.sampling import request_key
from a2c.llm.server import model_identity
from a2c.run.config_file import parse_config
from a2c.system.cache import Cache
from tests.conftest import free_port
from tests.fake_openai import SlowServer

QUESTIONS = [GenerationRequest(messages=(Message("user", f"Question {i}?"),)) for i in range(3)]
VLLM_ENTRY = {"id": "served", "object": "model", "created": 1718000000, "owned_by": "vllm",
              "root": "/models/qwen-0.5b", "parent": None, "max_model_len": 2048, "permission": [{}]}


@pytest.fixture
def servers() -> Iterator[list[SlowServer]]:
    started = [SlowServer() for _ in range(3)]
    yield started
    for server in started:
        server.stop()


def _generator(urls: list[str], cache: Cache) -> CachedGenerator:
    config = GeneratorConfig(backend="openai", model="served", base_urls=urls, cache=None, retry_wait=0.01,
                             max_retries=1)
    return CachedGenerator(OpenAIBackend(config), cache)


@pytest.mark.parametrize(("listing", "identity"), [
    # vLLM: the loaded path in `root`; `created` changes with every call and is left out
    ({"data": [VLLM_ENTRY]}, {"id": "served", "root": "/models/qwen-0.5b"}),
    # llama.cpp's llama-server: the file as id and what the file holds in `meta`
    ({"data": [{"id": "m.gguf", "owned_by": "llamacpp", "meta": {"n_params": 134515008, "size": 1}}]},
     {"id": "m.gguf", "meta": {"n_params": 134515008, "size": 1}}),
    # one model served under another name (llama-cpp-python without an alias reports the file)
    ({"data": [{"id": "/models/a.gguf", "object": "model"}]}, {"id": "/models/a.gguf"}),
    # nothing beyond the configured name, several models none of which is ours, no list: unknown
    ({"data": [{"id": "served", "object": "model", "owned_by": "me"}]}, None),
    ({"data": [{"id": "a"}, {"id": "b"}]}, None),
    ({"data": "nope"}, None),
    (["served"], None),
])
def test_model_identity_keeps_what_names_the_weights(listing, identity):
    assert model_identity(listing, "served") == identity


def test_replicas_of_one_model_share_entries_and_another_model_misses(servers, tmp_path):
    first, second, other = servers
    roots = ("/models/qwen-0.5b", "/models/qwen-0.5b", "/models/llama")
    for server, root in zip(servers, roots, strict=True):
        server.models = [{**VLLM_ENTRY, "root": root, "created": id(server)}]
    cache = Cache(tmp_path / "c.sqlite")

    generator = _generator([first.url], cache)
    generator.generate(QUESTIONS)
    generator.generate(QUESTIONS[:1])
    assert len(first.arrived) == 3 and first.model_lists == 1  # /models is asked once per generator

    replica = _generator([second.url], cache)  # another server, the same weights: all from the cache
    assert all(g.cached == [True] for g in replica.generate(QUESTIONS)) and second.arrived == []

    changed = _generator([other.url], cache)  # the same name, other weights: every request asked
    assert not any(g.cached[0] for g in changed.generate(QUESTIONS)) and len(other.arrived) == 3
    assert cache.count() == 6


def test_a_server_that_says_nothing_beyond_the_name_keeps_the_old_keys(servers, tmp_path):
    plain, no_list, _ = servers
    plain.models = [{"id": "served", "object": "model", "owned_by": "me"}]
    no_list.models = None  # /models answers 404
    cache = Cache(tmp_path / "c.sqlite")
    # an entry as a2c wrote it before keys held the served model
    old = request_key("openai", "served", QUESTIONS[0], 0)
    cache.put(old, {"text": "from before", "finish_reason": "stop", "completion_tokens": 2, "logprobs": None})
    for server in (plain, no_list):
        out = _generator([server.url], cache).generate(QUESTIONS[:1])[0]
        assert out.text == "from before" and out.cached == [True] and server.arrived == []


def test_replicas_serving_different_models_are_refused(servers, tmp_path):
    first, second, _ = servers
    first.models = [VLLM_ENTRY]
    second.models = [{**VLLM_ENTRY, "root": "/models/other"}]
    generator = _generator([first.url, second.url], Cache(tmp_path / "c.sqlite"))
    with pytest.raises(BackendError, match=r"base_urls serve different models as 'served'.*/models/other"):
        generator.generate(QUESTIONS)
    assert first.arrived == second.arrived == []


def test_the_real_llama_cpp_server_reports_its_model(llama_server):
    from a2c.models.embedded import DEFAULT_MODEL

    def backend(model: str) -> OpenAIBackend:
        return OpenAIBackend(GeneratorConfig(backend="openai", model=model, base_urls=[llama_server.base_url],
                                             cache=None))

    # llama-cpp-python lists its one model under its alias: asked for by that name, nothing more is said;
    # asked for by another name, the alias it really serves becomes part of the key
    assert backend(DEFAULT_MODEL).served_model() is None
    assert backend("another-name").served_model() == {"id": DEFAULT_MODEL}


def _config(tmp_path, url: str) -> str:
    path = tmp_path / "exp.yaml"
    path.write_text(textwrap.dedent(f"""
        name: down
        output: {tmp_path / "run"}
        generator: {{backend: openai, model: x, base_urls: ["{url}"], max_retries: 5, retry_wait: 30}}
        judges: [exact]
        accuracy: {{similarities: [rouge1]}}
    """))
    return str(path)


def test_run_on_a_refused_port_fails_before_the_first_stage(tmp_path, capsys):
    url = f"http://127.0.0.1:{free_port()}/v1"
    # without the check the first stage would retry for 30 + 60 + 120 + ... seconds
    assert main(["run", _config(tmp_path, url), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"cannot reach the server at {url} (ConnectError" in err
    assert not (tmp_path / "run").exists()  # nothing ran, nothing was written


def test_the_check_covers_every_generator_a_config_names():
    config = parse_config(textwrap.dedent("""
        name: x
        generator: {backend: openai, base_urls: ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]}
        aux_generator: {backend: openai, base_urls: "http://127.0.0.1:3/v1"}
        judges:
          - {name: llm, generator: {backend: openai, base_urls: "http://127.0.0.1:4/v1"}}
    """))
    urls = [url for c in served_generators(config) if c.backend == "openai" for url in c.base_urls]
    assert urls == [f"http://127.0.0.1:{port}/v1" for port in (1, 2, 3, 4)]
