"""Judge options: one typed model per judge, checked (names and values) when a config or preset loads."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from a2c.common.errors import A2CError
from a2c.judges import (
    JUDGES,
    JudgeError,
    JudgeOptions,
    OptionError,
    PairwiseJudge,
    PresetError,
    build_judge,
    hf,
    load_preset,
    validate_options,
)
from a2c.judges.presets import judge_options
from a2c.llm import GeneratorConfig
from a2c.llm.base import Completion, Generation, GenerationStats
from a2c.run.config_file import load_config, parse_config
from a2c.settings.config import ConfigError, dump_config
from a2c.system.cache import NoCache

THRESHOLD_JUDGES = [name for name in JUDGES.names() if "threshold" in judge_options(name)]


@pytest.fixture
def nothing_is_built(monkeypatch):
    """Loading a config must not build a judge or load a model: both raise here."""

    def refuse(*args, **kwargs):
        raise AssertionError("a judge or model was built while the config loaded")

    monkeypatch.setattr(hf, "load_encoder", refuse)
    monkeypatch.setattr(hf, "load_pair_classifier", refuse)
    monkeypatch.setattr(PairwiseJudge, "__init__", refuse)


def test_every_judge_declares_a_typed_options_model():
    assert JUDGES.names() == THRESHOLD_JUDGES  # every judge decides with a threshold
    for name in JUDGES.names():
        model = JUDGES.get(name).Options
        assert issubclass(model, JudgeOptions)
        assert judge_options(name) == set(model.model_fields) >= {"threshold", "cache"}
        assert all(field.description for field in model.model_fields.values())


@pytest.mark.parametrize(("option", "message"), [
    ("threshold: high", "x.yaml:7: judges.1.threshold: Input should be a valid number"),
    ("batch_size: 0", "x.yaml:7: judges.1.batch_size: Input should be greater than or equal to 1"),
    ("batch_size: abc", "x.yaml:7: judges.1.batch_size: Input should be a valid integer"),
    ("max_length: 0", "x.yaml:7: judges.1.max_length: Input should be greater than or equal to 1"),
    ("batchsize: 8", "x.yaml:7: judges.1.batchsize: unknown option (did you mean 'batch_size'?); this "
                     "judge takes ['batch_size', 'cache', 'device', 'max_length', 'model', 'offline', "
                     "'prompt', 'prompt_name', 'threshold']"),
])
def test_bad_option_fails_at_config_load_with_file_line_and_key(tmp_path, nothing_is_built, option, message):
    path = tmp_path / "x.yaml"
    path.write_text("name: x\ndataset:\n  name: quickstart\njudges:\n  - exact\n  - name: embedding\n"
                    f"    {option}\n    model: all-MiniLM-L6-v2\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value)


@pytest.mark.parametrize(("judge", "option", "message"), [
    ("llm", "max_tokens: 0", "judges.0.max_tokens: Input should be greater than or equal to 1"),
    ("llm", "logprobs: -1", "judges.0.logprobs: Input should be greater than or equal to 0"),
    ("llm", "template: no_such_template", "judges.0.template: Value error, no shipped prompt template"),
    ("llm", "directional: sometimes", "judges.0.directional: Input should be a valid boolean"),
    ("pp", "label: [a, b]", "judges.0.label: Input should be a valid string"),
    ("ner", "model: ''", "judges.0.model: String should have at least 1 character"),
    ("rouge1", "threshold: .nan", "judges.0.threshold: Input should be a finite number"),
    ("entail", "cache: [a]", "judges.0.cache: Input is not a valid path"),
])
def test_each_judges_values_are_checked_at_load(nothing_is_built, judge, option, message):
    with pytest.raises(ConfigError) as info:
        parse_config(f"name: x\njudges:\n  - name: {judge}\n    {option}\n")
    assert f"<config>:4: {message}" in str(info.value)


def test_a_bad_generator_mapping_is_named_down_to_its_field(nothing_is_built):
    text = "name: x\njudges:\n  - name: llm\n    generator:\n      model: m\n      backend: tgi\n"
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    # the union's branch name (GeneratorConfig) stays out of the key path; the line is the field's own
    assert "<config>:6: judges.0.generator.backend: Value error, unknown generation backend 'tgi'" in \
        str(info.value)
    with pytest.raises(ConfigError, match=r"<config>:4: judges\.0\.generator: Input should be a valid "
                                          r"dictionary or instance of GeneratorConfig"):
        parse_config("name: x\njudges:\n  - name: llm\n    generator: gpt-4\n")


def test_config_options_come_out_typed_and_the_config_dumps_as_written():
    config = parse_config("name: x\njudges:\n  - name: embedding\n    threshold: 1\n    batch_size: '8'\n"
                          "    cache: scores.sqlite\n  - name: llm\n    generator: {backend: openai}\n")
    embedding, llm = config.judges
    assert embedding.options == {"threshold": 1.0, "batch_size": 8, "cache": Path("scores.sqlite")}
    assert isinstance(embedding.options["threshold"], float)
    assert llm.options == {"generator": {"backend": "openai"}}  # only what was given: a run fills in the rest
    assert parse_config(dump_config(config)) == config
    assert "threshold: 1\n" in dump_config(config)


@pytest.mark.parametrize("preset", ["offline", "paper"])
def test_shipped_presets_parse_with_typed_options(nothing_is_built, preset):
    specs = load_preset(preset).judges
    for spec in specs:
        validated = validate_options(spec.name, spec.options)
        assert validated.given() == spec.options  # options a preset hands on validate again unchanged
        if "threshold" in spec.options:
            assert isinstance(spec.options["threshold"], float)
    if preset == "paper":
        llm = next(s for s in specs if s.name == "llm")
        assert isinstance(validate_options("llm", llm.options).generator, GeneratorConfig)
        assert next(s for s in specs if s.name == "entail").options["batch_size"] == 8


def test_preset_options_are_coerced_and_bad_values_name_file_judge_and_key(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("judges:\n  - name: rouge1\n    threshold: 1\n  - name: ner\n    batch_size: '32'\n")
    rouge, ner = load_preset(str(good)).judges
    assert rouge.options == {"threshold": 1.0} and isinstance(rouge.options["threshold"], float)
    assert ner.options == {"batch_size": 32}
    bad = tmp_path / "bad.yaml"
    bad.write_text("judges:\n  - name: exact\n  - name: embedding\n    threshold: high\n")
    with pytest.raises(PresetError, match=r"bad\.yaml: judges\[1\]: judge 'embedding': threshold: Input "
                                          r"should be a valid number.*got 'high'"):
        load_preset(str(bad))


def test_a_bad_preset_fails_a_config_that_names_it(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("judges:\n  - name: embedding\n    batch_size: 0\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: judges\[0\]: judge 'embedding': batch_size: Input "
                                          r"should be greater than or equal to 1"):
        parse_config(f"name: x\njudges: {bad}\n")


def test_build_judge_gives_the_same_message_and_one_error_class():
    with pytest.raises(OptionError, match=r"^judge 'embedding': threshold: Input should be less than or "
                                          r"equal to 1, got 2\.0$") as info:
        build_judge("embedding", threshold=2.0)
    assert isinstance(info.value, A2CError) and isinstance(info.value, JudgeError)
    with pytest.raises(PresetError, match=r"batchsize: unknown option \(did you mean 'batch_size'\?\)"):
        build_judge("ner", batchsize=3)
    with pytest.raises(OptionError, match=r"^judge 'llm': logprobs: Input should be greater than or equal "
                                          r"to 0, got -1; max_tokens: Input should be greater than or equal "
                                          r"to 1, got 0$"):
        build_judge("llm", logprobs=-1, max_tokens=0)


def test_judges_are_built_from_their_validated_options():
    judge = build_judge("entail", model="some/nli-model", batch_size="16", threshold=0.25, offline=True,
                        cache=None)
    assert judge.options == JUDGES.get("entail").Options(model="some/nli-model", batch_size=16,
                                                         threshold=0.25, offline=True, cache=None)
    assert (judge.batch_size, judge.threshold, judge.offline) == (16, 0.25, True)
    assert build_judge("pp").threshold == 0.8 and build_judge("embedding").threshold == 0.8
    assert build_judge("exact").options.cache is None  # lexical judges default to no cache


class _EchoGenerator:
    """A `Generator` built in Python: passed as an object, it must not be validated as a config."""

    backend = "test"
    model = "echo"
    stats = GenerationStats()

    def generate(self, requests):
        return [Generation(request=r, completions=[Completion(text="Yes")]) for r in requests]


def test_runtime_objects_pass_through_while_yaml_forms_validate():
    generator, cache = _EchoGenerator(), NoCache()
    judge = build_judge("llm", generator=generator, cache=cache)
    assert judge.generator is generator and judge.options.cache is cache
    assert judge.matrix("q", ["a", "b"])[0, 1] == 1.0
    assert validate_options("llm", {"generator": {"backend": "openai"}}).generator == \
        GeneratorConfig(backend="openai")
    assert validate_options("embedding", {"cache": "c.sqlite"}).cache == Path("c.sqlite")
    assert validate_options("embedding", {"cache": None}).cache is None


@settings(max_examples=40, deadline=None)
@given(st.floats(min_value=0.0, max_value=1.0))
def test_any_threshold_in_the_unit_interval_validates(value):
    for name in THRESHOLD_JUDGES:
        assert validate_options(name, {"threshold": value}).threshold == value


@settings(max_examples=40, deadline=None)
@given(st.floats().filter(lambda x: math.isnan(x) or not 0.0 <= x <= 1.0))
def test_any_threshold_outside_the_unit_interval_is_refused(value):
    for name in THRESHOLD_JUDGES:
        with pytest.raises(ValidationError) as info:
            validate_options(name, {"threshold": value})
        assert [e["loc"] for e in info.value.errors()] == [("threshold",)]


def test_cli_lists_a_judges_options_from_its_model(capsys):
    from a2c.cli import main

    assert main(["judge", "--list", "-j", "embedding", "-j", "llm"]) == 0
    out = capsys.readouterr().out
    assert "  batch_size: int >= 1, default 64 — inputs per forward pass" in out
    assert "  threshold: float >= 0.0 <= 1.0, default 0.8" in out
    assert "  max_tokens: int >= 1, default 3" in out
    assert "  generator: GeneratorConfig | null | Generator, default null" in out
    assert main(["judge", "--list", "-j", "embeding"]) == 2
    assert "Did you mean 'embedding'" in capsys.readouterr().err


def test_embedding_prompt_options():
    plain = build_judge("embedding", cache=None)
    # no prompt set: the cache identity is the one scores were stored under before prompts existed
    assert plain.identity() == {"judge": "embedding", "model": "all-MiniLM-L6-v2", "max_length": None}
    named = build_judge("embedding", prompt_name="query", cache=None)
    assert named.identity()["prompt_name"] == "query" and named.identity() != plain.identity()
    assert build_judge("embedding", prompt="", cache=None).identity()["prompt"] == ""
    with pytest.raises(OptionError, match=r"'embedding': prompt: .*`prompt` or `prompt_name`, not both"):
        build_judge("embedding", prompt_name="query", prompt="query: ")
