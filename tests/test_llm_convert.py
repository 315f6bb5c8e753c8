"""`a2c models prepare`: the GGUF → safetensors conversion vLLM needs, checked through the real CLI and
by loading the result back through the transformers backend; and the vLLM engine settings that need no
vLLM install to check."""

from __future__ import annotations

import json
import os

import pytest
from pydantic import ValidationError

from a2c.cli import main
from a2c.common.errors import A2CError
from a2c.llm import CachedGenerator, GenerationRequest, GeneratorConfig, Message
from a2c.llm.transformers_backend import TransformersBackend
from a2c.llm.vllm_backend import _use_every_core, vllm_model_path
from a2c.models.convert import convert_gguf, prepared_dir

pytestmark = pytest.mark.slow


def test_prepare_writes_a_folder_that_generates_like_the_gguf(smollm2, tmp_path, capsys):
    out = tmp_path / "smol"
    assert main(["models", "prepare", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "[4/4]" in printed and str(out.resolve()) in printed
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config and (out / "model.safetensors").is_file()

    converted = CachedGenerator(TransformersBackend(str(out), batch_size=4))
    req = GenerationRequest(messages=(Message("user", "Name a fruit that is yellow."),), max_tokens=8)
    assert converted.generate([req])[0].text == smollm2.generate([req])[0].text


def test_conversion_refuses_non_gguf_and_vllm_asks_for_prepare(tmp_path):
    with pytest.raises(A2CError, match="not a GGUF model"):
        convert_gguf(str(tmp_path), tmp_path / "out", report=lambda _: None)
    assert prepared_dir("x/y/Model.Q4.gguf", tmp_path) == tmp_path / "Model.Q4"
    with pytest.raises(A2CError, match="a2c models prepare"):
        vllm_model_path(str(tmp_path / "missing.gguf"))
    assert vllm_model_path("org/some-hf-model") == "org/some-hf-model"


def test_vllm_cpu_worker_gets_every_allowed_core_unless_the_environment_says_otherwise(monkeypatch):
    env: dict[str, str] = {}
    monkeypatch.setattr(os, "environ", env)
    _use_every_core()
    cores = sorted(os.sched_getaffinity(0))
    assert env == {"VLLM_CPU_OMP_THREADS_BIND": ",".join(map(str, cores)),
                   "VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "OMP_NUM_THREADS": str(len(cores))}
    env.clear()
    env["VLLM_CPU_OMP_THREADS_BIND"] = "0"
    _use_every_core()
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "0"


def test_vllm_block_size_must_be_a_multiple_of_16():
    assert GeneratorConfig(backend="vllm").vllm_block_size == 32
    with pytest.raises(ValidationError, match="vllm_block_size"):
        GeneratorConfig(backend="vllm", vllm_block_size=24)


def test_vllm_prepares_the_embedded_model_on_first_use(tmp_path, monkeypatch, capsys):
    from a2c.models.embedded import DEFAULT_MODEL

    monkeypatch.setenv("A2C_MODELS_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    folder = vllm_model_path(DEFAULT_MODEL)
    assert folder == str((tmp_path / "cache" / "prepared" / DEFAULT_MODEL).resolve())
    assert (tmp_path / "cache" / "prepared" / DEFAULT_MODEL / "model.safetensors").is_file()
    assert f"vllm: preparing {DEFAULT_MODEL}: [4/4]" in capsys.readouterr().out
    assert vllm_model_path(DEFAULT_MODEL) == folder  # second use: no conversion
    assert capsys.readouterr().out == ""


def test_an_interrupted_conversion_leaves_no_folder_and_a_finished_one_replaces_the_old(tmp_path):
    from a2c.models.embedded import DEFAULT_MODEL

    out = tmp_path / "models" / "smol"

    def interrupt(line: str) -> None:
        if line.startswith("[4/4]"):  # the weights are written, the tokenizer not yet
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        convert_gguf(DEFAULT_MODEL, out, report=interrupt)
    assert list((tmp_path / "models").iterdir()) == []
    convert_gguf(DEFAULT_MODEL, out, report=lambda _: None)
    (out / "stale.txt").write_text("from an earlier conversion")
    convert_gguf(DEFAULT_MODEL, out, report=lambda _: None)
    assert not (out / "stale.txt").exists() and (out / "tokenizer.json").is_file()
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["smol"]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not a model")
    with pytest.raises(A2CError, match="holds no converted model"):
        convert_gguf(DEFAULT_MODEL, tmp_path / "mine", report=lambda _: None)
    assert (tmp_path / "mine" / "notes.txt").is_file()
