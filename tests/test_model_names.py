"""A generator's `model:` is checked with the config, loading nothing: a misspelt name is refused in one
line with the closest embedded names, before a run folder exists; a value too long to be a path is a name,
not an `OSError`; the Hugging Face cache and hub ids keep their meaning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.llm.config import OpenAIConfig, ScriptedConfig, TransformersConfig
from a2c.llm.model_names import UnknownModelError, check_model_name, closest_embedded, in_hub_cache, is_hub_id
from a2c.models.embedded import DEFAULT_MODEL, EMBEDDED_GENERATORS, resolve_model
from a2c.qa.config import ExperimentConfig
from a2c.run.config_file import load_config, parse_config
from a2c.run.pipeline import run_experiment
from a2c.settings.config import ConfigError, check_model_names
from a2c.system.hub import ModelNotFoundError, check_available

TYPO = "SmolLM2-135M-Instrcut"
LONG = "m" * 300  # past NAME_MAX (255): probing it as a path is ENAMETOOLONG
# what `a2c run` prints for a stage ("variation: runs (not run before)")
STAGE_LINE = ("variation:", "answers:", "judges", "not run before")
# prints, after a failed `a2c run`, which model libraries the process imported
PROBE = ("import sys\nfrom a2c.cli import main\ncode = main(sys.argv[1:])\n"
         "print('imported:', *[m for m in ('torch', 'transformers', 'vllm') if m in sys.modules])\n"
         "sys.exit(code)\n")


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch):
    """An empty Hugging Face cache, so only what a test puts there is cached."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


def cache_model(cache: Path, repo: str) -> None:
    """A model in the Hugging Face cache's own layout (refs/main → snapshots/REV/config.json)."""
    folder = cache / f"models--{repo.replace('/', '--')}"
    revision = "0" * 40
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(revision, encoding="utf-8")
    snapshot = folder / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}", encoding="utf-8")


def write_config(folder: Path, model: str, backend: str = "transformers", key: str = "generator") -> Path:
    data = folder / "q.csv"
    data.write_text("id,question\ntower,Where is the Eiffel Tower?\n", encoding="utf-8")
    config = folder / "c.yaml"
    config.write_text(f"name: typo\ndataset:\n  name: file\n  path: q.csv\n{key}:\n  backend: {backend}\n"
                      f"  model: {model}\n", encoding="utf-8")
    return config


def a2c_run(tmp_path: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """The real `a2c run`, hub out and an empty HF cache, in the config's folder."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home")}
    return subprocess.run([sys.executable, "-c", PROBE, "run", str(config.name), "--no-progress"],
                          cwd=config.parent, env=env, capture_output=True, text=True, timeout=120)


def test_a_misspelt_model_fails_at_once_with_a_suggestion_and_no_run_folder(tmp_path):
    done = a2c_run(tmp_path, write_config(tmp_path, TYPO))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"a2c: error: c.yaml:7: generator.model: unknown model '{TYPO}': ")
    assert f"did you mean '{DEFAULT_MODEL}'?" in lines[0]
    assert all(name in lines[0] for name in EMBEDDED_GENERATORS)
    # before any stage started and any model library loaded, and nothing written
    assert not any(marker in done.stdout for marker in STAGE_LINE), done.stdout
    assert done.stdout.strip() == "imported:"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "q.csv"]


def test_a_300_character_model_name_gets_the_same_refusal(tmp_path):
    done = a2c_run(tmp_path, write_config(tmp_path, LONG))
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "unexpected error" not in done.stderr and "File name too long" not in done.stderr
    assert done.stderr.startswith(f"a2c: error: c.yaml:7: generator.model: unknown model '{'m' * 80}'… "
                                  "(300 characters): no embedded model")
    assert DEFAULT_MODEL in done.stderr
    assert not (tmp_path / "runs").exists()


def test_an_llm_judges_misspelt_generator_is_refused_before_the_run(tmp_path):
    config = tmp_path / "c.yaml"
    (tmp_path / "q.csv").write_text("id,question\ntower,Where is the Eiffel Tower?\n", encoding="utf-8")
    config.write_text("name: typo\ndataset: {name: file, path: q.csv}\ngenerator: {backend: scripted, "
                      f"model: echo}}\njudges:\n  - name: llm\n    generator: {{model: {TYPO}}}\n",
                      encoding="utf-8")
    done = a2c_run(tmp_path, config)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"a2c: error: unknown model '{TYPO}': ")
    assert f"did you mean '{DEFAULT_MODEL}'?" in done.stderr and len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "runs").exists() and done.stdout.strip() == "imported:"


@pytest.mark.parametrize(("backend", "key"), [("vllm", "generator"), ("transformers", "aux_generator")])
def test_every_in_process_generator_is_checked(tmp_path, empty_hub_cache, backend, key):
    with pytest.raises(ConfigError, match=rf"c\.yaml:7: {key}\.model: unknown model 'qwen2\.5-coder-0\.5b': "
                       r".*did you mean 'Qwen2\.5-Coder-0\.5B-Instruct' or "
                       r"'Qwen2\.5-Coder-1\.5B-Instruct'\?"):
        load_config(write_config(tmp_path, "qwen2.5-coder-0.5b", backend, key))


@pytest.mark.parametrize("backend", ["openai", "scripted"])
def test_a_served_or_scripted_model_name_is_not_checked(tmp_path, backend):
    """A server names its models itself; a scripted model's name is its script."""
    config = load_config(write_config(tmp_path, "my-own-model", backend))
    assert config.generator.model == "my-own-model"


def test_names_that_resolve_are_kept(tmp_path, empty_hub_cache):
    folder = tmp_path / "tiny"
    folder.mkdir()
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    for name in (*EMBEDDED_GENERATORS, str(folder), str(gguf), "HuggingFaceTB/SmolLM2-135M-Instruct"):
        check_model_name(name)  # nothing raised
    with pytest.raises(UnknownModelError, match=r"GGUF model file not found: .*absent\.gguf"):
        check_model_name(str(tmp_path / "absent.gguf"))


def test_a_model_in_the_hub_cache_is_valid_under_its_bare_name(empty_hub_cache):
    assert not in_hub_cache("tiny-local")
    with pytest.raises(UnknownModelError):
        check_model_name("tiny-local")
    cache_model(empty_hub_cache, "tiny-local")
    assert in_hub_cache("tiny-local")
    check_model_name("tiny-local")


def test_a_config_folder_relative_model_folder_is_found(tmp_path, empty_hub_cache):
    (tmp_path / "models" / "tiny").mkdir(parents=True)
    config = load_config(write_config(tmp_path, "models/tiny"))
    assert config.generator.model == str(tmp_path / "models" / "tiny")


def test_an_uncached_hub_id_waits_for_the_hub_check(tmp_path, empty_hub_cache, monkeypatch):
    """An OWNER/NAME id passes the config; with the hub kept out, `a2c run` refuses it before any stage."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = write_config(tmp_path, "nobody/no-such-model")
    assert load_config(config).generator.model == "nobody/no-such-model"
    done = a2c_run(tmp_path, config)
    assert done.returncode == 2
    assert done.stderr.startswith("a2c: error: cannot load generator model 'nobody/no-such-model': it is "
                                  "not a local folder and not in the Hugging Face cache, and HF_HUB_OFFLINE")
    assert not (tmp_path / "runs").exists() and done.stdout.strip() == "imported:"


def test_a_value_too_long_for_a_path_is_a_name_everywhere_it_is_probed(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # the config's path rules try a model value beside the config
    config = parse_config(f"name: x\ngenerator: {{model: {LONG}}}\n", "x.yaml", tmp_path)
    assert config.generator.model == LONG
    with pytest.raises(ConfigError, match=r"^x\.yaml: generator\.model: unknown model"):
        check_model_names(config, None, "x.yaml")  # without the YAML tree, no line
    with pytest.raises(ModelNotFoundError, match="GGUF model file not found"):
        resolve_model(LONG + ".gguf")
    with pytest.raises(ModelNotFoundError, match="HF_HUB_OFFLINE keeps the hub out"):
        check_available(LONG, LONG, "generator")


def test_the_python_api_refuses_before_making_the_run_folder(tmp_path, empty_hub_cache):
    (tmp_path / "q.csv").write_text("id,question\ntower,Where is the Eiffel Tower?\n", encoding="utf-8")
    config = ExperimentConfig(name="typo", output=str(tmp_path / "run"),
                              generator=TransformersConfig(model=TYPO),
                              dataset={"name": "file", "path": str(tmp_path / "q.csv")})
    with pytest.raises(ConfigError, match=rf"^generator\.model: unknown model '{TYPO}'.*did you mean"):
        run_experiment(config, progress=False)
    assert not (tmp_path / "run").exists()


def test_closest_names_ignore_case_and_suggest_nothing_far_off():
    assert closest_embedded("smollm2-135m-instruct") == [DEFAULT_MODEL]
    assert closest_embedded("SmolLM2-135M") == [DEFAULT_MODEL]
    assert closest_embedded("gpt-4o") == []


@given(st.text(max_size=400))
def test_any_name_is_kept_or_refused_as_a_model_error(name):
    """Whatever the text (NULs, 400 characters, `..`), the check answers with a2c's error or nothing."""
    try:
        check_model_name(name)
    except ModelNotFoundError as exc:
        assert "\n" not in str(exc)


def test_served_and_scripted_generators_built_in_python_are_not_checked():
    check_model_names(ExperimentConfig(name="x", generator=OpenAIConfig(model="anything at all")))
    check_model_names(ExperimentConfig(name="x", generator=ScriptedConfig(model="scripted:Yes|No")))


@given(st.from_regex(r"[a-zA-Z0-9_.\-]{0,8}/[a-zA-Z0-9_.\-]{0,8}", fullmatch=True))
def test_hub_ids_are_the_ones_the_hub_library_accepts(name):
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(name)
        valid = True
    except ValueError:
        valid = False
    assert is_hub_id(name) == valid
