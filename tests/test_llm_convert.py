"""`a2c models prepare`: the GGUF → safetensors conversion vLLM needs, checked through the real CLI and
by loading the result back through the transformers backend."""

from __future__ import annotations

import json

import pytest

from a2c.cli import main
from a2c.errors import A2CError
from a2c.llm import CachedGenerator, GenerationRequest, Message
from a2c.llm.convert import convert_gguf, prepared_dir
from a2c.llm.transformers_backend import TransformersBackend
from a2c.llm.vllm_backend import vllm_model_path

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
