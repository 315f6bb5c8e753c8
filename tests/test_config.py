"""Experiment configs: the shipped ones validate; bad YAML, unknown keys and bad names fail clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from a2c.common.errors import A2CError
from a2c.common.registry import UnknownNameError
from a2c.qa.config import ExperimentConfig
from a2c.run.config_file import load_config, parse_config
from a2c.run.tasks import TASKS, task_named
from a2c.settings.config import ConfigError, dump_config
from a2c.settings.key_hints import did_you_mean, keys_at
from tests.truthfulqa import TRUTHFULQA

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


@pytest.mark.parametrize("name", ["quickstart", "truthfulqa-a2c", "truthfulqa-a2c-paper"])
def test_shipped_experiments_validate(name):
    config = load_config(EXPERIMENTS / f"{name}.yaml")
    assert config.name == name
    assert config.judges and config.variation.temperatures
    # the resolved config written into a run folder reads back to the same config
    assert parse_config(dump_config(config)) == config


def test_the_paper_config_states_the_authors_published_settings():
    config = load_config(EXPERIMENTS / "truthfulqa-a2c-paper.yaml")
    var = config.variation
    assert var.temperatures == pytest.approx([0.01 + 0.1 * k for k in range(10)])
    assert (var.top_p, var.paraphrase_temperature) == (0.7, 0.6)
    assert config.ask_to_choose.idk_text == "Don't know the correct answer"
    assert {"rouge1", "bleurt"} <= {s if isinstance(s, str) else s.name for s in config.accuracy.similarities}
    llm = next(j for j in config.judges if j.name == "llm")
    assert llm.options["generator"]["backend"] == "transformers"  # vLLM serves no T5


def test_decoding_defaults_follow_the_paper():
    config = parse_config("name: x\n")
    # answers to paraphrases are nucleus samples; the rank prompt's last option uses the paper's wording
    assert (config.variation.paraphrase_temperature, config.variation.top_p) == (0.6, 0.7)
    assert config.ask_to_choose.idk_text == "Don't know the correct answer"


def test_defaults_and_shorthands():
    config = parse_config("name: x\njudges: [embedding, rouge1]\n")
    assert [j.name for j in config.judges] == ["embedding", "rouge1"]
    assert config.dataset.name == "quickstart"
    assert config.run_dir == Path("runs") / "x"
    assert config.entropy_judge_name == "embedding"
    preset = parse_config("name: x\njudges: offline\n")
    assert "llm" in [j.name for j in preset.judges]
    assert preset.entropy_judge_name == "llm"
    assert preset.judges[0].options["threshold"] == 0.8


def test_unchecked_defaults_equal_the_checked_specs():
    """The spec defaults are built without loading their registries (a config error stays light); they must
    be what validating the same names gives, in value and in what a run's config.yaml writes."""
    built, checked = ExperimentConfig(name="x"), ExperimentConfig.model_validate({
        "name": "x", "judges": ["embedding"], "accuracy": {"similarities": ["rouge1", "embedding"]},
        "selection": ["a2c"]})
    for field in ("judges", "accuracy", "selection"):
        assert getattr(built, field) == getattr(checked, field), field
    assert built.model_dump(mode="json") == checked.model_dump(mode="json")
    assert [j.options for j in built.judges] == [{}]


def test_every_task_is_registered_once_by_its_config_model():
    """`parse_config` picks a task's model from `TASKS` without importing the task's stages; the model names
    its task's spec, whose config model is that same model (one name, one entry, one declaration)."""
    assert TASKS.names() == ["classification", "qa"]
    for name, model in TASKS.items():
        task = task_named(name)
        assert task.name == name and task.config is model and model.model_fields["task"].default == name


def test_an_unknown_task_is_named_with_the_known_ones():
    with pytest.raises(UnknownNameError, match=r"unknown task 'qaa'\. Did you mean 'qa'"):
        task_named("qaa")


@pytest.mark.parametrize(("text", "expected"), [
    # unknown key, nested: named with its dotted path and its line
    ("name: x\nvariation:\n  temperatures: [0.5]\n  temperatur: 3\n",
     "<config>:4: variation.temperatur: unknown key"),
    ("name: x\nsed: 3\n", "<config>:2: sed: unknown key"),
    # bad values
    ("name: x\nvariation:\n  top_p: 1.5\n", "<config>:3: variation.top_p: Input should be less than"),
    ("name: x\nvariation:\n  temperatures: [0.5, -1]\n", "<config>:3: variation.temperatures"),
    # NaN and inf pass `>= 0` checks (or read as "greater than"): refused as such, not written into the JSONL
    ("name: x\nvariation:\n  temperatures: [0.5, .nan]\n",
     "<config>:3: variation.temperatures.1: Input should be a finite number"),
    ("name: x\nvariation:\n  paraphrase_temperature: .inf\n",
     "<config>:3: variation.paraphrase_temperature: Input should be a finite number"),
    ("name: x\nask_to_choose:\n  rank_temperature: .inf\n",
     "<config>:3: ask_to_choose.rank_temperature: Input should be a"),
    ("name: x\ngenerator:\n  backend: openai\n  timeout: .inf\n",
     "<config>:4: generator.timeout: Input should be a finite"),
    ("name: x\nlimit: 0\n", "<config>:2: limit"),
    ("name: x\nvariation:\n  answer_field: middle\n", "<config>:3: variation.answer_field"),
    # unknown registry names, with suggestions
    ("name: x\njudges:\n  - embedding\n  - rouge\n", "<config>:4: judges.1.name: Value error, unknown judge"),
    ("name: x\ndataset:\n  name: truthfulq\n", "Did you mean 'truthfulqa'"),
    ("name: x\nvariation:\n  techniques: [synonym]\n", "<config>:3: variation.techniques"),
    ("name: x\njudges: nosuchpreset\n", "no shipped judge preset 'nosuchpreset'"),
    ("name: x\njudges:\n  - name: embedding\n    treshold: 0.5\n",
     "<config>:4: judges.0.treshold: unknown option (did you mean 'threshold'?); this judge takes"),
    ("name: x\njudges: [rouge1, rouge1]\n", "listed twice"),
    ("name: x\njudges: [rouge1]\nentropy_judge: llm\n", "entropy_judge 'llm' is not among the judges"),
    ("name: x\ngenerator:\n  backend: tgi\n", "<config>:3: generator.backend"),
    ("seed: 1\n", "name: Field required"),
])
def test_bad_configs_name_the_key_and_line(text, expected):
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert expected in str(info.value)


def test_malformed_yaml_and_missing_file_name_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nvariation: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:3: not valid YAML: expected ',' or ']'"):
        load_config(bad)
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.yaml")
    listing = tmp_path / "list.yaml"
    listing.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match=r"list\.yaml: expected a mapping"):
        load_config(listing)
    typo = tmp_path / "typo.yaml"
    typo.write_text("name: x\n\nvariaton: {}\n")
    with pytest.raises(ConfigError, match=r"typo\.yaml:3: variaton: unknown key"):
        load_config(typo)


def test_custom_technique_is_accepted():
    config = parse_config("name: x\nvariation:\n  techniques:\n    - synonyms\n    - name: passive\n"
                          "      instruction: Turn it into the passive voice.\n"
                          "      example_question: Who wrote the book?\n"
                          "      example_paraphrase: By whom was the book written?\n")
    techniques = config.variation.resolved_techniques()
    assert [t.name for t in techniques] == ["synonyms", "passive"]
    assert isinstance(config, ExperimentConfig)


def test_no_cache_flag_turns_off_every_generator_cache_and_keeps_the_stage_keys():
    from a2c.cli.run import apply_overrides
    from a2c.qa.stages import STAGES

    config = parse_config("name: x\ngenerator: {cache: a.sqlite}\naux_generator: {cache: b.sqlite}\n")
    off = apply_overrides(config, limit=None, no_cache=True)
    assert off.generator.cache is None and off.aux_generator.cache is None
    # a --no-cache rerun reuses every finished stage of the run folder
    assert [s.config_slice(off) for s in STAGES] == [s.config_slice(config) for s in STAGES]
    kept = apply_overrides(config, limit=3, no_cache=False)
    assert kept.limit == 3 and str(kept.generator.cache) == "a.sqlite"


def test_limit_flag_must_be_positive():
    from a2c.cli.run import apply_overrides

    with pytest.raises(ConfigError, match="--limit must be >= 1, got 0"):
        apply_overrides(parse_config("name: x\n"), limit=0, no_cache=False)


def test_the_truthfulqa_config_reads_the_hub_and_dataset_path_reads_a_local_csv():
    from a2c.cli.run import apply_overrides

    config = load_config(EXPERIMENTS / "truthfulqa-a2c.yaml")
    assert config.dataset.path is None  # a user who cloned only this repository gets the hub's copy
    local = apply_overrides(config, limit=None, no_cache=False, dataset_path=TRUTHFULQA)
    assert local.dataset.path == str(TRUTHFULQA.resolve())
    assert local.dataset.name == "truthfulqa" and local.variation == config.variation


def test_dataset_path_names_a_missing_file_and_a_dataset_that_takes_none(tmp_path):
    from a2c.cli.run import apply_overrides

    config = load_config(EXPERIMENTS / "truthfulqa-a2c.yaml")
    with pytest.raises(ConfigError, match=r"--dataset-path: no such file: .*nothing\.csv"):
        apply_overrides(config, limit=None, no_cache=False, dataset_path=tmp_path / "nothing.csv")
    broken = tmp_path / "broken.csv"
    broken.write_text("not,the,columns\n1,2,3\n", encoding="utf-8")
    with pytest.raises(A2CError, match=r"broken\.csv:1: not a TruthfulQA CSV"):
        apply_overrides(config, limit=None, no_cache=False, dataset_path=broken)
    with pytest.raises(ConfigError, match=r"--dataset-path: .*quickstart"):
        apply_overrides(parse_config("name: x\n"), limit=None, no_cache=False, dataset_path=TRUTHFULQA)


@pytest.mark.parametrize(("text", "expected"), [
    ("name: x\nacuracy: {}\n", "<config>:2: acuracy: unknown key (did you mean 'accuracy'?)"),
    ("name: x\naccuracy:\n  similarites: [rouge1]\n",
     "<config>:3: accuracy.similarites: unknown key (did you mean 'similarities'?)"),
    # a list item's own model, and a generator's backend model picked by its tag
    ("name: x\nvariation:\n  techniques:\n    - name: a\n      instructon: b\n",
     "<config>:5: variation.techniques.0.instructon: unknown key (did you mean 'instruction'?)"),
    ("name: x\naux_generator:\n  backend: openai\n  base_url: [u]\n",
     "<config>:4: aux_generator.base_url: unknown key (did you mean 'base_urls'?)"),
    # the values of a mapping (classification's suites by name)
    ("name: x\ntask: classification\ndataset: {name: nli-quickstart, labels: [entailment, neutral, "
     "contradiction]}\nsuites:\n  calm:\n    treshold: 0.5\n",
     "<config>:6: suites.calm.treshold: unknown key (did you mean 'threshold'?)"),
])
def test_an_unknown_key_at_any_depth_gets_the_closest_valid_keys(text, expected):
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert expected in str(info.value)


def test_an_unknown_key_close_to_nothing_gets_no_suggestion():
    with pytest.raises(ConfigError) as info:
        parse_config("name: x\nzzzzzz: 1\n")
    assert str(info.value).endswith("<config>:2: zzzzzz: unknown key")


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_key_with_a_letter_dropped_is_suggested_back(task):
    # every key of a task's config and of its sections, each one-letter slip of it that is no key itself
    model = TASKS.get(task)
    for location in [(), *((name,) for name in model.model_fields)]:
        keys = keys_at(model, location)
        for key in keys:
            for typo in {key[:i] + key[i + 1:] for i in range(len(key))} - set(keys):
                assert repr(key) in did_you_mean(model, (*location, typo)), (location, typo)
