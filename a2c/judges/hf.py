"""sentence-transformers models behind the model judges: loaded once per process, run in sorted batches.

sentence-transformers defines each model: its modules (pooling, Dense layers, normalisation), maximum length,
prompts, and a cross-encoder's labels and activation. What a2c adds is what makes a dataset-wide pass fast:
`PairScorer` (sequence-pair models: paraphrase and NLI classifiers, BLEURT's regression head) remembers the
outputs of every ordered pair it has scored and `SentenceEncoder` embeds each unique text once; one of each
exists per model, so `entail` and `contra` on the same NLI model share their forward passes. Both tokenise all
their inputs in one call and batch them by token count, so a batch pads only to its own longest input, and
count the inputs cut to the model's length. A model goes where its judge's `device` says (`auto`: where
sentence-transformers puts it, the GPU if there is one); one is loaded per model and device.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from types import SimpleNamespace
from typing import Any, ClassVar, TypeVar

import numpy as np

from a2c.common.errors import A2CError
from a2c.common.wording import plural
from a2c.judges.deberta import trim_relative_attention
from a2c.models.embedded import encoder_location
from a2c.system.devices import resolve_device
from a2c.system.hub import from_pretrained


class LabelError(A2CError):
    """A classifier whose `id2label` lacks the label a judge needs."""


class PromptError(A2CError):
    """A `prompt_name` the embedding model does not define."""


class TruncationWarning(UserWarning):
    """Inputs longer than the model's limit were cut to fit (counted, never a crash)."""


def resolve_model(model: str) -> str:
    """The folder or hub id sentence-transformers should load for a configured model name (an embedded
    model's folder inside its package: `a2c.models.embedded`, the one table of them)."""
    return encoder_location(model)


_SHARED: dict[tuple[Any, ...], Any] = {}
T = TypeVar("T")


def _shared(key: tuple[Any, ...], build: Callable[[], T]) -> T:
    """One object per key for the whole process (`functools.cache` would tell `f(x)` and `f(x, False)` apart,
    loading a model twice and splitting its memo)."""
    if key not in _SHARED:
        _SHARED[key] = build()
    shared: T = _SHARED[key]
    return shared


def _load(kind: Any, model: str, offline: bool, device: str) -> Any:
    """A sentence-transformers model in eval mode on `device`, through a2c's offline-first lookup (its models
    are built by their constructor, which takes `local_files_only` like `from_pretrained`). DeBERTa relative
    attention gets the exact trimmed bias."""
    loader = SimpleNamespace(from_pretrained=kind)
    placed = {} if device == "auto" else {"device": resolve_device(device)}  # auto: sentence-transformers'
    network = from_pretrained(loader, resolve_model(model), model=model, kind="judge", offline=offline,
                              **placed)
    trim_relative_attention(network)
    return network.eval()


def load_pair_classifier(model: str, offline: bool = False, device: str = "auto") -> Any:
    """The `sentence_transformers.CrossEncoder` of a model on a device, once per process."""
    from sentence_transformers import CrossEncoder

    return _shared((CrossEncoder, model, device), lambda: _load(CrossEncoder, model, offline, device))


def load_encoder(model: str, offline: bool = False, device: str = "auto") -> Any:
    """The `sentence_transformers.SentenceTransformer` of a model on a device, once per process."""
    from sentence_transformers import SentenceTransformer

    return _shared((SentenceTransformer, model, device),
                   lambda: _load(SentenceTransformer, model, offline, device))


def label_index(config: Any, wanted: Sequence[str], model: str) -> int:
    """Index of the first label in `wanted` (case-insensitive) according to the model's own `id2label`."""
    labels = {int(i): str(name) for i, name in (config.id2label or {}).items()}
    by_name = {name.casefold(): i for i, name in labels.items()}
    for name in wanted:
        if name.casefold() in by_name:
            return by_name[name.casefold()]
    raise LabelError(
        f"model {model!r} has labels {sorted(labels.values())} but none of {list(wanted)}; "
        "set the judge option that names the label to use (`label:`)")


def resolve_prompt(network: Any, model: str, prompt_name: str | None, prompt: str | None) -> str | None:
    """The text put before each input, as sentence-transformers chooses it: `prompt`, else the model's prompt
    called `prompt_name`, else the model's default prompt (if it names one)."""
    if prompt is not None:
        return prompt
    name = prompt_name if prompt_name is not None else network.default_prompt_name
    if name is not None and name not in network.prompts:
        raise PromptError(f"model {model!r} has no prompt {name!r}; its prompts: {sorted(network.prompts)}")
    return network.prompts[name] if name is not None else None


# tokenizers without a limit report ~1e30, which the Rust backend cannot take; no text model reads this many
_LONGEST = 1 << 20


# special tokens plus a word-start marker per segment (SentencePiece): the tokens that cover no input byte
_TOKENS_WITHOUT_BYTES = 8


def _count_over_limit(tokenizer: Any, firsts: Sequence[str], seconds: Sequence[str] | None,
                      sizes: Sequence[int], limit: int) -> int:
    """How many inputs exceed `limit` tokens. Every other token covers at least one byte of text, so only
    inputs with more bytes than that are tokenised to find out (short answers skip a second tokenisation)."""
    suspects = [k for k, size in enumerate(sizes) if size + _TOKENS_WITHOUT_BYTES > limit]
    if not suspects:
        return 0
    pairs = [seconds[k] for k in suspects] if seconds is not None else None
    ids = tokenizer([firsts[k] for k in suspects], pairs)["input_ids"]
    return sum(len(row) > limit for row in ids)


def encode(tokenizer: Any, firsts: Sequence[str], seconds: Sequence[str] | None, max_length: int
           ) -> dict[str, list[list[int]]]:
    """Token ids (and the other model inputs the tokenizer names) of every input, truncated to `max_length`,
    unpadded: what `tokenizer(firsts, seconds, truncation=True, max_length=...)` returns, computed faster.

    A fast tokenizer's Rust backend is called directly with the settings transformers would give it
    (transformers' per-input conversion of the result cost as much as tokenising), and each distinct
    text is tokenised once, whole, then every input is assembled by the backend's own post-processor
    (truncation, special tokens, type ids), which is what encoding an input does internally: the n
    answers of a question form n(n − 1) pairs but only n texts. For bench_judges' 31k pairs: 1.3 s → 0.5 s."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return dict(tokenizer(list(firsts), None if seconds is None else list(seconds), truncation=True,
                              max_length=max_length))
    backend.no_padding()
    # whole texts: truncating each alone first would change how `longest_first` splits a pair
    backend.no_truncation()
    texts = list(dict.fromkeys(firsts if seconds is None else chain(firsts, seconds)))
    alone = dict(zip(texts, backend.encode_batch(texts, add_special_tokens=False), strict=True))
    backend.enable_truncation(max_length, stride=0, strategy="longest_first",
                              direction=tokenizer.truncation_side)
    pairs = zip(firsts, seconds, strict=True) if seconds is not None else ((a, None) for a in firsts)
    encodings = [backend.post_process(alone[a], None if b is None else alone[b]) for a, b in pairs]
    fields = {"input_ids": "ids", "token_type_ids": "type_ids", "attention_mask": "attention_mask"}
    return {key: [getattr(e, attribute) for e in encodings] for key, attribute in fields.items()
            if key == "input_ids" or key in tokenizer.model_input_names}


def _token_batches(tokenizer: Any, encoded: Any, batch_size: int) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Pre-tokenised inputs in batches of similar token count, each padded to its own longest input.
    Yields the batch's input positions (a tensor) and its model inputs. Padding is done here in numpy:
    `tokenizer.pad` walks every token in Python and cost a visible share of a small model's pass."""
    import torch

    if tokenizer.pad_token_id is None:
        raise ValueError(f"{type(tokenizer).__name__} has no padding token, so inputs cannot be batched")
    pad_value = {"input_ids": tokenizer.pad_token_id, "token_type_ids": tokenizer.pad_token_type_id}
    lengths = np.fromiter(map(len, encoded["input_ids"]), dtype=np.int64, count=len(encoded["input_ids"]))
    order = np.argsort(lengths, kind="stable")
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        sizes = lengths[batch]
        width = int(sizes.max())
        columns = np.arange(width)
        filled = (columns >= (width - sizes)[:, None]) if tokenizer.padding_side == "left" else \
            (columns < sizes[:, None])
        inputs = {}
        for key, values in encoded.items():
            array = np.full((len(batch), width), pad_value.get(key, 0), dtype=np.int64)  # attention mask: 0
            array[filled] = np.fromiter(chain.from_iterable(values[k] for k in batch), dtype=np.int64,
                                        count=int(sizes.sum()))
            inputs[key] = torch.from_numpy(array)
        yield torch.from_numpy(batch), inputs


def _takes_plain_tokens(network: Any) -> bool:
    """Whether sentence-transformers feeds this model the tokenizer's own output for a text or pair, so a2c
    may tokenise itself (faster, see `encode`). Models whose inputs it formats (chat templates, per-model
    processor settings) go through the model's own `preprocess` instead."""
    from sentence_transformers.base.modules import Transformer

    first = network[0]
    return (isinstance(first, Transformer) and first.tokenizer is not None and not first.processing_kwargs
            and set(first.modality_config) == {"text"}
            and first.transformer_task in {"feature-extraction", "sequence-classification"})


class _BatchedModel:
    """The pass both model kinds share: tokenise every input in one call, count the over-long ones, run
    batches of similar token count through the sentence-transformers model and keep its `output` feature."""

    output: ClassVar[str]  # the feature the model's last module writes

    def __init__(self, model: str, network: Any, max_length: int | None, prompt: str | None) -> None:
        self.model = model
        self.network = network  # the sentence-transformers model
        self.tokenizer = network.tokenizer
        self.max_length = min(int(max_length or network.max_seq_length or _LONGEST), _LONGEST)
        self.prompt = prompt or None  # prepended to each (first) text, as sentence-transformers does
        self._plain = _takes_plain_tokens(network)
        # a pooling that leaves the prompt out reads its token count from the features
        self._extra = {} if self.prompt is None or not self._plain else \
            {k: v for k, v in network.preprocess([""], prompt=self.prompt).items() if k == "prompt_length"}
        self.truncated = 0
        self.forward_passes = 0
        self.forward_seconds = 0.0  # time inside the model alone, to compare with the whole pass

    def _run(self, firsts: Sequence[str], seconds: Sequence[str] | None, batch_size: int) -> Any:
        """The model's `output` for each input (rows in input order, float32 on the CPU)."""
        import torch

        texts = firsts if self.prompt is None else [self.prompt + a for a in firsts]
        sizes = [len(a.encode()) + (len(seconds[k].encode()) if seconds is not None else 0)
                 for k, a in enumerate(texts)]
        too_long = _count_over_limit(self.tokenizer, texts, seconds, sizes, self.max_length)
        self.truncated += too_long
        if too_long:
            warnings.warn(f"{plural(too_long, 'input')} longer than {self.max_length} tokens "
                          f"{'was' if too_long == 1 else 'were'} truncated for "
                          f"{self.model}", TruncationWarning, stacklevel=3)
        encoded = encode(self.tokenizer, texts, seconds, self.max_length)
        positions, parts = [], []
        device = self.network.device
        with torch.inference_mode():
            for batch, inputs in _token_batches(self.tokenizer, encoded, batch_size):
                if self._plain:
                    features = {k: v.to(device) for k, v in inputs.items()} | self._extra
                else:
                    items = [firsts[k] if seconds is None else (firsts[k], seconds[k])
                             for k in batch.tolist()]
                    features = {k: v.to(device) if isinstance(v, torch.Tensor) else v
                                for k, v in self.network.preprocess(items, prompt=self.prompt).items()}
                start = time.perf_counter()
                parts.append(self.network(features)[self.output].float().cpu())
                self.forward_seconds += time.perf_counter() - start
                self.forward_passes += 1
                positions.append(batch)
        stacked = torch.cat(parts)
        rows = torch.empty_like(stacked)
        rows[torch.cat(positions)] = stacked
        return rows


class PairScorer(_BatchedModel):
    """A `sentence_transformers.CrossEncoder` (classifier or regression head) that remembers each ordered
    pair's raw outputs."""

    output = "scores"

    def __init__(self, model: str, max_length: int | None = None, offline: bool = False,
                 device: str = "auto") -> None:
        network = load_pair_classifier(model, offline, device)
        super().__init__(model, network, max_length, resolve_prompt(network, model, None, None))
        self._memo: dict[tuple[str, str], np.ndarray] = {}

    @property
    def config(self) -> Any:
        """The transformers config of the underlying model (`id2label`, `num_labels`)."""
        return self.network.model.config

    def probabilities(self, pairs: Sequence[tuple[str, str]], batch_size: int) -> np.ndarray:
        """`CrossEncoder.predict(..., apply_softmax=True)` for each ordered pair: the softmax over the labels
        of the model's activated outputs (rows in input order)."""
        import torch

        scores = self.network.activation_fn(torch.from_numpy(self.logits(pairs, batch_size)))
        return torch.softmax(scores, dim=-1).numpy()

    def logits(self, pairs: Sequence[tuple[str, str]], batch_size: int) -> np.ndarray:
        """The model's raw outputs for each ordered pair (rows in input order), each distinct pair run once.
        A regression head (BLEURT: one output) is read here: a softmax over one label is always 1."""
        todo = list(dict.fromkeys(p for p in pairs if p not in self._memo))
        if todo:
            outputs = self._run([a for a, _ in todo], [b for _, b in todo], batch_size)
            # one conversion for the whole call, not per batch or per row
            self._memo.update(zip(todo, outputs.numpy(), strict=True))
        return np.stack([self._memo[p] for p in pairs]) if pairs else \
            np.zeros((0, self.config.num_labels), dtype=np.float32)


def pair_scorer(model: str, max_length: int | None = None, offline: bool = False,
                device: str = "auto") -> PairScorer:
    """The process-wide scorer for a model on a device, shared by every judge that uses it."""
    return _shared((PairScorer, model, max_length, device),
                   lambda: PairScorer(model, max_length, offline, device))


class SentenceEncoder(_BatchedModel):
    """A `sentence_transformers.SentenceTransformer` that embeds each distinct text once: its own modules,
    pooling, normalisation and prompt."""

    output = "sentence_embedding"

    def __init__(self, model: str, max_length: int | None = None, offline: bool = False,
                 prompt_name: str | None = None, prompt: str | None = None, device: str = "auto") -> None:
        network = load_encoder(model, offline, device)
        super().__init__(model, network, max_length, resolve_prompt(network, model, prompt_name, prompt))
        self._memo: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """What `SentenceTransformer.encode` gives for each text (rows in input order)."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if todo:
            vectors = self._run(todo, None, batch_size)[:, :self.network.truncate_dim]
            self._memo.update(zip(todo, vectors.numpy(), strict=True))
        return np.stack([self._memo[t] for t in texts]) if texts else \
            np.zeros((0, self.network.get_embedding_dimension() or 0), dtype=np.float32)

    def unit_vectors(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """The embeddings scaled to length 1, so dot products are cosine similarities."""
        vectors = self.embed(texts, batch_size)
        unit: np.ndarray = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return unit


def sentence_encoder(model: str, max_length: int | None = None, offline: bool = False,
                     prompt_name: str | None = None, prompt: str | None = None,
                     device: str = "auto") -> SentenceEncoder:
    """The process-wide encoder for a model, prompt and device, shared by every judge that uses it."""
    return _shared((SentenceEncoder, model, max_length, prompt_name, prompt, device),
                   lambda: SentenceEncoder(model, max_length, offline, prompt_name, prompt, device))
