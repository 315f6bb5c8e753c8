"""`a2c run --set KEY=VALUE`: settings put over a config file's before validation, so one file runs in
several variants (an option order, a vote, a batch size) without copies of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from a2c.run.config_file import apply_settings, load_config
from a2c.settings.config import ConfigError, dump_config

CONFIG = """\
name: variants
limit: 2
dataset:
  name: quickstart
generator:
  backend: scripted
  model: "scripted:1|Is it so?|Nothing happens"
ask_to_choose:
  enabled: true
judges: [exact]
"""


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "variants.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def test_settings_are_validated_and_kept_in_the_stored_config(config_file):
    config = load_config(config_file, overrides=["ask_to_choose.option_order=shuffled",
                                                 "ask_to_choose.vote=debiased", "seed=7",
                                                 "judges=[exact, rouge1]"])
    assert (config.ask_to_choose.option_order, config.ask_to_choose.vote, config.seed) == \
        ("shuffled", "debiased", 7)
    assert [j.name for j in config.judges] == ["exact", "rouge1"]
    stored = yaml.safe_load(dump_config(config))
    assert stored["ask_to_choose"]["option_order"] == "shuffled" and stored["seed"] == 7
    assert load_config(config_file).ask_to_choose.option_order == "fixed"  # the file is unchanged


def test_a_later_setting_wins_and_missing_mappings_are_made(config_file):
    config = load_config(config_file, overrides=["variation.top_p=0.5", "variation.top_p=0.9"])
    assert config.variation.top_p == 0.9


@pytest.mark.parametrize(("override", "message"), [
    ("ask_to_choose.option_order", "expected KEY=VALUE"),
    ("=shuffled", "expected KEY=VALUE"),
    ("ask_to_choose..vote=plain", "expected KEY=VALUE"),
    ("seed=[1, 2", "is not YAML"),
    ("name.first=x", "sets name to str 'variants', not a mapping"),
])
def test_a_malformed_setting_is_one_line_naming_it(config_file, override, message):
    with pytest.raises(ConfigError, match=r"^--set ") as error:
        load_config(config_file, overrides=[override])
    assert message in str(error.value)


def test_a_bad_value_or_key_is_refused_as_a_file_setting_would_be(config_file):
    with pytest.raises(ConfigError, match=r"ask_to_choose\.option_order: Input should be 'fixed', 'shuffled' "
                       r"or 'cyclic' \(the value of --set ask_to_choose\.option_order=shufled\)$"):
        load_config(config_file, overrides=["ask_to_choose.option_order=shufled"])
    with pytest.raises(ConfigError,
                       match=r"ask_to_choose\.vot: .*\(the value of --set ask_to_choose\.vot=plain\)"):
        load_config(config_file, overrides=["ask_to_choose.vot=plain"])


@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(), max_size=3),
       st.lists(st.tuples(st.sampled_from(["a", "b", "x.y", "x.z"]), st.integers()), max_size=5))
def test_apply_settings_sets_each_key_and_leaves_its_input_alone(data, settings):
    before = dict(data)
    out = apply_settings(data, [f"{k}={v}" for k, v in settings], "f.yaml")
    assert data == before
    expected = dict(before)
    for key, value in settings:
        if "." in key:
            expected.setdefault("x", {})[key.split(".")[1]] = value
        else:
            expected[key] = value
    assert out == expected


def test_the_command_runs_a_variant_and_refuses_a_bad_one_before_any_stage(config_file, tmp_path):
    run = [sys.executable, "-m", "a2c", "run", str(config_file), "--no-progress", "--quiet",
           "--output", str(tmp_path / "run")]
    bad = subprocess.run([*run, "--set", "ask_to_choose.option_order=sideways"], capture_output=True,
                         text=True, timeout=300, cwd=tmp_path)
    assert bad.returncode == 2 and "option_order" in bad.stderr and not (tmp_path / "run").exists()
    good = subprocess.run([*run, "--set", "ask_to_choose.option_order=cyclic"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    stored = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text(encoding="utf-8"))
    assert stored["ask_to_choose"]["option_order"] == "cyclic"
