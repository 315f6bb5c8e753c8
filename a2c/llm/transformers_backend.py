"""In-process generation with transformers: the embedded CPU default, and the way to run seq2seq models.

Decoder-only (causal) and encoder-decoder (seq2seq, e.g. Flan-T5, which vLLM does not serve) models share
everything but how they are loaded, padded and where `generate`'s output holds the new tokens: the
model's config picks a `ModelFamily` that holds those differences. Prompts are batched (sorted by length
to waste little padding). A logits processor picks every row's token in one batched step
(`a2c.llm.row_sampler`: per-row temperature, top-p and seed, counter-based noise), so a row's sample
depends on its own seed and not on which other prompts share the batch; greedy decoding then just takes
the token the processor picked. Prompts longer than the model's context (capped by `max_model_len`) are
cut or refused before anything runs (`a2c.llm.context`).

Weights run on the resolved `device` in the resolved `dtype` (`resolve_dtype`). A GGUF model is
dequantized once per machine into the float32 safetensors folder `a2c models prepare` writes
(`a2c.models.convert.prepared_dir`); later loads read that folder and cast it, which takes seconds instead of
dequantizing on the CPU at every start. float32 keeps the dequantized values exact, so a float32 run
answers as the GGUF did.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from a2c.llm.base import Completion, GenerationRequest
from a2c.llm.config import DecodeLoop, TransformersConfig
from a2c.llm.context import ContextGuard, ContextPolicy, model_context
from a2c.llm.render import prompt_text
from a2c.llm.sampling import Emit, SampleResult
from a2c.models.convert import convert_gguf, prepared_dir
from a2c.models.embedded import ModelSource, resolve_model
from a2c.system.devices import device_type, resolve_device
from a2c.system.hub import from_pretrained
from a2c.system.progress import decoding_step, reading_prompts

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class ModelFamily:
    """What differs between decoder-only and encoder-decoder generation; the rest of the backend is shared."""

    auto_class: str  # the transformers Auto class that loads the weights
    # causal rows must end where generation starts (left padding); an encoder is masked from its padding,
    # so T5's usual right padding is fine
    padding_side: Literal["left", "right"]
    # a chat template already holds the special tokens a causal model expects; T5-style encoders were
    # trained on inputs that end in the tokenizer's EOS, which only the tokenizer adds
    add_special_tokens: bool
    # `generate` returns prompt + new tokens (causal) or the decoder start token + new tokens (seq2seq)
    echoes_prompt: bool


FAMILIES: dict[bool, ModelFamily] = {  # keyed by the model config's `is_encoder_decoder`
    False: ModelFamily("AutoModelForCausalLM", "left", add_special_tokens=False, echoes_prompt=True),
    True: ModelFamily("AutoModelForSeq2SeqLM", "right", add_special_tokens=True, echoes_prompt=False),
}


def model_family(config: Any) -> ModelFamily:
    """The family of a transformers model config."""
    return FAMILIES[bool(config.is_encoder_decoder)]


DTYPES = ("auto", "float32", "bfloat16", "float16")


def resolve_dtype(dtype: str, device: str) -> str:
    """The dtype weights run in: as given, or for `auto` bfloat16 on a CUDA GPU that computes in it natively
    (compute capability 8.0 and up: Ampere, Hopper) and float32 elsewhere (CPU, MPS, older GPUs), where
    half precision is slow or emulated."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype != "auto":
        return dtype
    import torch

    if device_type(device) == "cuda" and torch.cuda.get_device_properties(device).major >= 8:
        return "bfloat16"
    return "float32"


def weights_source(name: str) -> ModelSource:
    """Where to load a model's weights from: a GGUF model's converted folder, written on first use (the
    conversion writes a temporary folder and renames it, so an interrupted one leaves no folder behind);
    any other model as `resolve_model` finds it."""
    source = resolve_model(name)
    if source.gguf_file is None:
        return source
    folder = prepared_dir(name)
    if not (folder / "config.json").is_file():
        convert_gguf(name, folder, report=lambda line: print(f"transformers: preparing {name}: {line}"))
    return ModelSource(str(folder.resolve()))


@lru_cache(maxsize=4)
def load_model(name: str, device: str = "cpu", dtype: str = "float32") -> tuple[Any, Any]:
    """Tokenizer and model on `device` in `dtype` (resolved), loaded once per process; the config's
    `is_encoder_decoder` decides between a causal and a seq2seq model."""
    import torch
    import transformers

    source = weights_source(name)

    def load(loader: Any, **extra: Any) -> Any:
        # a local folder or the HF cache first; a name nothing has is a2c's ModelNotFoundError in seconds
        return from_pretrained(loader, source.location, model=name, kind="generator", **extra)

    config = load(transformers.AutoConfig)
    family = model_family(config)
    tokenizer = load(transformers.AutoTokenizer)
    tokenizer.padding_side = family.padding_side
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    auto_class = getattr(transformers, family.auto_class)
    # straight onto the device in its dtype: no float32 copy in host memory, no second copy to the GPU
    model = load(auto_class, config=config, dtype=getattr(torch, dtype), device_map=device)
    model.to(device)  # a no-op where the map placed every weight; kept for loaders that ignore the map
    model.eval()
    return tokenizer, model


def _row_sampler(jobs: Sequence[GenerationRequest], device: Any, max_tokens: int) -> Any:
    """A logits processor that leaves one token per row possible: the one `RowSampler` picks. Called once
    per decoding step, it also reports the step of the batch's rows to the progress bar."""
    import torch
    from transformers import LogitsProcessor

    from a2c.llm.row_sampler import RowSampler

    sampler = RowSampler([j.temperature for j in jobs], [j.top_p for j in jobs], [j.seed for j in jobs],
                         device)

    class PickedToken(LogitsProcessor):
        step = 0

        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
            self.step += 1
            decoding_step(len(jobs), self.step, max_tokens)
            out = torch.full_like(scores, float("-inf"))
            return out.scatter_(1, sampler.pick(scores)[:, None], 0.0)

    return PickedToken()


class TransformersBackend:
    backend = "transformers"
    keep_going = False  # a batch runs as one whole: it fails as one
    # sampled tokens come from `a2c.llm.row_sampler` (counter-based noise, an exponential race): one seed
    # draws other tokens than under the per-row torch.Generator before it, so cached sampled draws of that
    # one are not served again (greedy answers are unchanged and keep their keys)
    sampler: str | None = "counter-race"

    def __init__(self, model: str, *, batch_size: int = 32, device: str = "cpu", dtype: str = "auto",
                 max_model_len: int = 2048, context_policy: ContextPolicy = "truncate",
                 decode: DecodeLoop = "auto") -> None:
        self.model = model
        self.batch_size = batch_size
        self.device = device  # resolved by the config: cpu, cuda, cuda:N or mps
        self.dtype_name = resolve_dtype(dtype, device)
        self.graphs = device_type(device) == "cuda"
        # the static loop pays where steps cost launches (CUDA graphs); on the CPU arithmetic dominates
        self.static = decode == "static" or (decode == "auto" and self.graphs)
        self.tokenizer, self.lm = load_model(model, device, self.dtype_name)
        self.family = model_family(self.lm.config)
        self.static = self.static and not self.lm.config.is_encoder_decoder
        self.guard = ContextGuard(model, model_context(self.lm.config, self.tokenizer, max_model_len),
                                  context_policy, reply_in_context=not self.lm.config.is_encoder_decoder)
        self.truncates_to = self.guard.truncates_to

    @classmethod
    def from_config(cls, config: TransformersConfig) -> TransformersBackend:
        return cls(config.model, batch_size=config.batch_size, device=resolve_device(config.device),
                   dtype=config.dtype, max_model_len=config.max_model_len,
                   context_policy=config.context_policy, decode=config.decode)

    def served_model(self) -> None:
        return None  # it loads what the name says (a local folder or a hub id)

    def draw_identity(self) -> dict[str, str] | None:
        """What besides the request decides a draw here, for the request-cache key: the device type and
        dtype; None on the CPU in float32, so keys of CPU runs made before GPUs were supported stay valid."""
        kind = device_type(self.device)
        return None if (kind, self.dtype_name) == ("cpu", "float32") else {"device": kind,
                                                                            "dtype": self.dtype_name}

    def run(self, jobs: Sequence[GenerationRequest], emit: Emit) -> None:
        texts = [prompt_text(self.tokenizer, job) for job in jobs]
        encoded = self.tokenizer(texts, add_special_tokens=self.family.add_special_tokens)["input_ids"]
        fitted = [self.guard.fit(ids, job) for ids, job in zip(encoded, jobs, strict=True)]  # refusals first
        groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
        for j, job in enumerate(jobs):
            groups[(job.max_tokens, job.stop, job.logprobs)].append(j)
        for (max_tokens, stop, logprobs), members in groups.items():
            members.sort(key=lambda j: len(fitted[j]))
            for start in range(0, len(members), self.batch_size):
                batch = members[start:start + self.batch_size]
                done = self._generate([fitted[j] for j in batch], [jobs[j] for j in batch],
                                      max_tokens, stop, logprobs)
                emit([(j, result if len(fitted[j]) == len(encoded[j]) else
                       replace(result, truncated_to=self.guard.limit))
                      for j, result in zip(batch, done, strict=True)])

    def _generate(self, prompts: list[list[int]], jobs: list[GenerationRequest], max_tokens: int,
                  stop: tuple[str, ...], logprobs: int | None) -> list[SampleResult]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        tok = self.tokenizer
        enc = tok.pad({"input_ids": prompts}, return_tensors="pt").to(self.device)
        config = GenerationConfig(do_sample=False, max_new_tokens=max_tokens, pad_token_id=tok.pad_token_id,
                                  eos_token_id=tok.eos_token_id, return_dict_in_generate=True,
                                  output_logits=logprobs is not None, stop_strings=list(stop) or None)
        if self.static and logprobs is None:
            new_tokens = self._static_decode(enc, jobs, max_tokens, stop)
            out = None
        else:
            sampler = _row_sampler(jobs, self.lm.device, max_tokens)
            reading_prompts(len(jobs), enc["input_ids"].numel())
            with torch.inference_mode():
                out = self.lm.generate(**enc, generation_config=config, tokenizer=tok if stop else None,
                                       logits_processor=LogitsProcessorList([sampler]))
            # the one place the families differ after loading: what precedes the new tokens in the output
            # (the padded prompt, or the single decoder start token of an encoder-decoder)
            start = enc["input_ids"].shape[1] if self.family.echoes_prompt else 1
            new_tokens = out.sequences[:, start:]
        prompt_lengths = enc["attention_mask"].sum(dim=1).tolist()  # the encoder's input for seq2seq
        results = []
        for row, tokens in enumerate(new_tokens.tolist()):
            n_tokens = tokens.index(tok.eos_token_id) if tok.eos_token_id in tokens else len(tokens)
            text = tok.decode(tokens[:n_tokens], skip_special_tokens=True)
            finish = "stop" if n_tokens < len(tokens) else "length"
            cut = min((text.find(s) for s in stop if s in text), default=-1)
            if cut >= 0:
                text, finish = text[:cut], "stop"
            top: list[dict[str, float]] | None = None
            tokens_text: list[str] | None = None
            chosen: list[float] | None = None
            if logprobs is not None and out is not None:
                top, tokens_text, chosen = self._logprobs(out.logits, row, tokens[:n_tokens], logprobs)
            results.append(SampleResult(Completion(text, finish, n_tokens, top, token_logprobs=chosen,
                                                   tokens=tokens_text), int(prompt_lengths[row])))
        return results

    def _logprobs(self, logits: Any, row: int, tokens: list[int], k: int
                  ) -> tuple[list[dict[str, float]] | None, list[str], list[float]]:
        """Top-k (k >= 1) with the chosen token, the chosen tokens' texts and their log-probabilities for
        one row. `logits` are `generate`'s raw ones (`output_logits`), before the row sampler's temperature
        and top-p: log_softmax of them is the model's own distribution, the one sequence-probability and
        entropy signals are defined on (LM-Polygraph reads the same), whatever the sampling settings."""
        import torch

        tok = self.tokenizer
        top: list[dict[str, float]] | None = [] if k > 0 else None
        pieces, chosen = [], []
        for step, token in enumerate(tokens):
            lp = torch.log_softmax(logits[step][row].float(), dim=-1)
            pieces.append(tok.decode([token]))
            chosen.append(lp[token].item())
            if top is None:
                continue
            ids = lp.topk(k).indices.tolist()
            if token not in ids:
                ids.append(token)
            # tokens that decode to the same text share one entry holding their summed probability:
            # SentencePiece's "▁Yes" and "Yes" both decode to "Yes"
            same_text: dict[str, list[int]] = defaultdict(list)
            for i in ids:
                same_text[tok.decode([i])].append(i)
            top.append({piece: torch.logsumexp(lp[group], dim=0).item()
                        for piece, group in same_text.items()})
        return top, pieces, chosen

    def _static_decode(self, enc: Any, jobs: list[GenerationRequest], max_tokens: int,
                       stop: tuple[str, ...]) -> Any:
        """New tokens of a causal batch from `a2c.llm.static_decode` (CUDA graphs on a GPU)."""
        import torch

        from a2c.llm.row_sampler import RowSampler
        from a2c.llm.static_decode import StaticDecoder, stop_checker

        tok = self.tokenizer
        sampler = RowSampler([j.temperature for j in jobs], [j.top_p for j in jobs], [j.seed for j in jobs],
                             self.lm.device)
        decoder = StaticDecoder(self.lm, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                                graphs=self.graphs, stop=stop_checker(tok, stop))
        with torch.inference_mode():
            tokens = decoder.decode(enc["input_ids"], enc["attention_mask"], max_tokens, sampler.pick)
        self.graphs = decoder.graphs  # a capture that failed is not tried again
        return tokens
