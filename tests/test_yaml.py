"""YAML as its author wrote it: a key given twice is an error naming both lines (configs, judge presets,
prompt templates), and `yes`/`no`/`on`/`off` are the text written (YAML 1.2), not booleans."""

from __future__ import annotations

import textwrap

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from a2c.cli import main
from a2c.common.errors import A2CError
from a2c.common.files import parse_yaml
from a2c.judges import load_preset
from a2c.judges.presets import PresetError
from a2c.prompting.prompts import TemplateError, load_template
from a2c.run.config_file import parse_config
from a2c.settings.config import ConfigError

NLI = "task: classification\nname: n\ndataset: {{name: nli-quickstart, input: pair, labels: {labels}}}\n"


def test_a_second_generator_block_is_refused_with_both_lines(tmp_path, capsys):
    config = tmp_path / "exp.yaml"
    config.write_text(textwrap.dedent("""
        name: twice
        generator:
          backend: scripted
        judges: [exact]
        generator:
          backend: openai
    """).lstrip())
    assert main(["run", str(config), "--output", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"a2c: error: {config}:5: not valid YAML: duplicate key 'generator' "
                                "(first on line 2); give each key once"]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("text", "line"), [
    ("name: x\nvariation:\n  samples: 1\n  top_p: 0.5\n  samples: 2\n", 5),
    ("name: x\njudges:\n  - {name: embedding, threshold: 0.5, threshold: 0.9}\n", 3),
])
def test_duplicate_keys_at_any_depth(text, line):
    with pytest.raises(ConfigError, match=rf"^exp\.yaml:{line}: not valid YAML: duplicate key"):
        parse_config(text, "exp.yaml")


def test_presets_and_templates_refuse_duplicate_keys_too(tmp_path):
    preset = tmp_path / "p.yaml"
    preset.write_text("name: p\ndescription: d\ndescription: e\njudges: [exact]\n")
    with pytest.raises(PresetError, match=r"p\.yaml:3: not valid YAML: duplicate key 'description'"):
        load_preset(str(preset))
    template = tmp_path / "t.yaml"
    template.write_text("fields: [q]\nuser: '{q}'\nuser: 'again {q}'\n")
    with pytest.raises(TemplateError, match=r"t\.yaml:3: not valid YAML: duplicate key 'user' \(first on"):
        load_template(str(template))


def test_a_merge_key_may_still_override():
    data, _ = parse_yaml("base: &b {top_p: 0.5, samples: 1}\nmine:\n  <<: *b\n  samples: 3\n", "f", A2CError)
    assert data["mine"] == {"top_p": 0.5, "samples": 3}


def test_yes_and_no_labels_are_the_text_written():
    assert parse_config(NLI.format(labels="[yes, no, on, off]")).dataset.labels == ["yes", "no", "on", "off"]
    # before: [True, False] and a type error on labels, or a label set that never matched the data


def test_boolean_settings_still_take_yes_and_no():
    config = parse_config("name: x\nask_to_choose: {enabled: no}\n")
    assert config.ask_to_choose.enabled is False
    assert parse_config("name: x\nask_to_choose: {enabled: On}\n").ask_to_choose.enabled is True
    data, _ = parse_yaml("a: true\nb: False\nc: yes\nd: 'no'\ne: y\n", "f", A2CError)
    assert data == {"a": True, "b": False, "c": "yes", "d": "no", "e": "y"}


KEYS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.sampled_from(
    ["yes", "no", "on", "off", "Yes", "OFF", "y", "n", "true", "null", "1.5"]), KEYS)


@given(st.dictionaries(KEYS, st.one_of(VALUES, st.lists(VALUES, max_size=4)), max_size=6))
def test_what_a_yaml_writer_dumps_reads_back_the_same(data):
    text = yaml.safe_dump(data, allow_unicode=True)
    assert parse_yaml(text, "f", A2CError)[0] == data
