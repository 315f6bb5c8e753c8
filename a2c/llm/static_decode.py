"""Decoding a left-padded batch of a causal model with a static KV cache, each step one CUDA graph replay.

On a GPU a small model's `generate` is bound by Python, not arithmetic: every decoding step walks 30
layers of modules and launches hundreds of kernels (~23 ms a step on an H200 for SmolLM2-135M, the GPU idle
four fifths of the time). Here the KV cache is transformers' `StaticCache` (fixed addresses), the
attention mask is a buffer the loop updates in place, and on CUDA one decoding step (the whole forward to
the last position's logits) is captured once per batch as a CUDA graph and replayed: a step is one launch
plus the row sampler. Elsewhere (the CPU) the same loop runs the step eagerly, which is how the tests check
it against `generate`: same tokens, same stopping.

What the loop keeps from `generate`: positions count only real tokens (left padding is skipped), the
logits reach the picker as float32, a finished row repeats the pad token, and a row stops at EOS or when
its text ends with a stop string (transformers' own `StopStringCriteria`).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

Picker = Callable[[torch.Tensor], torch.Tensor]  # rows × vocabulary float32 logits → rows of token ids


@dataclass
class StepBuffers:
    """The inputs one decoding step reads, at fixed addresses so a captured graph can replay over them."""

    tokens: torch.Tensor  # rows × 1, the token each row feeds in
    positions: torch.Tensor  # rows × 1, its position among the row's real tokens
    cache_position: torch.Tensor  # 1, the slot of the static cache it fills
    mask: torch.Tensor  # rows × 1 × 1 × cache length, True where the step may attend


def prompt_mask(attention_mask: torch.Tensor, length: int) -> torch.Tensor:
    """The prefill's 4-D boolean mask over a cache of `length` slots: causal and blind to left padding;
    a padding query with no real key before it may attend everywhere (its output is never read, and an
    all-blind row would make NaNs that reach the cache)."""
    rows, prompt = attention_mask.shape
    keys = torch.zeros(rows, length, dtype=torch.bool, device=attention_mask.device)
    keys[:, :prompt] = attention_mask.bool()
    causal = torch.ones(prompt, length, dtype=torch.bool, device=attention_mask.device).tril()
    mask = causal[None, :, :] & keys[:, None, :]
    mask |= ~mask.any(dim=-1, keepdim=True)
    return mask[:, None, :, :]


class StaticDecoder:
    """One batch's decoding: prefill, then steps until every row has stopped or `max_new_tokens` are out."""

    def __init__(self, model: Any, *, eos_token_id: int, pad_token_id: int, graphs: bool,
                 stop: Callable[[torch.Tensor], torch.Tensor] | None = None) -> None:
        self.model = model
        self.eos, self.pad = eos_token_id, pad_token_id
        self.graphs = graphs
        self.stop = stop  # full sequences (rows × length) → rows that end in a stop string
        # transformers renamed `past_key_values` to `cache` (5.2x); take whichever this one has
        names = inspect.signature(model.forward).parameters
        self.cache_arg = "cache" if "cache" in names else "past_key_values"

    def decode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, max_new_tokens: int,
               pick: Picker) -> torch.Tensor:
        """The new tokens, rows × steps run (at most `max_new_tokens`; a stopped row's tail is padding)."""
        from transformers import StaticCache

        rows, prompt = input_ids.shape
        length = prompt + max_new_tokens
        device = input_ids.device
        cache = StaticCache(config=self.model.config, max_cache_len=length)
        sequences = torch.full((rows, length), self.pad, dtype=input_ids.dtype, device=device)
        sequences[:, :prompt] = input_ids
        real = attention_mask.sum(dim=1, keepdim=True)
        logits = self.model(input_ids=input_ids, attention_mask=prompt_mask(attention_mask, length),
                            position_ids=(attention_mask.cumsum(dim=1) - 1).clamp(min=0),
                            cache_position=torch.arange(prompt, device=device), use_cache=True,
                            logits_to_keep=1, **{self.cache_arg: cache}).logits[:, -1, :]
        mask = torch.zeros(rows, 1, 1, length, dtype=torch.bool, device=device)
        mask[:, 0, 0, :prompt] = attention_mask.bool()
        buffers = StepBuffers(tokens=torch.empty(rows, 1, dtype=input_ids.dtype, device=device),
                              positions=real.clone(), cache_position=torch.tensor([prompt], device=device),
                              mask=mask)
        unfinished = torch.ones(rows, dtype=torch.bool, device=device)
        step = self._step(cache, buffers)
        replay: Callable[[], torch.Tensor] | None = None
        steps = 0
        for steps in range(1, max_new_tokens + 1):
            chosen = pick(logits.float())
            chosen = torch.where(unfinished, chosen, torch.full_like(chosen, self.pad))
            sequences[:, prompt + steps - 1] = chosen
            unfinished &= chosen != self.eos
            if self.stop is not None:
                unfinished &= ~self.stop(sequences[:, :prompt + steps])
            if steps == max_new_tokens or not bool(unfinished.any()):
                break
            buffers.tokens.copy_(chosen[:, None])
            buffers.mask[:, 0, 0, prompt + steps - 1] = True
            if steps > 1:
                buffers.positions += 1
                buffers.cache_position += 1
            if not self.graphs:
                logits = step()
            elif steps == 1:
                logits = _on_side_stream(step)  # warm-up before capture: kernels chosen, cache allocated
            else:
                replay = replay or self._capture(step)
                logits = replay() if replay is not None else step()
        return sequences[:, prompt:prompt + steps]

    def _step(self, cache: Any, buffers: StepBuffers) -> Callable[[], torch.Tensor]:
        def step() -> torch.Tensor:
            logits: torch.Tensor = self.model(input_ids=buffers.tokens, attention_mask=buffers.mask,
                              position_ids=buffers.positions, cache_position=buffers.cache_position,
                              use_cache=True, **{self.cache_arg: cache}).logits[:, -1, :]
            return logits

        return step

    def _capture(self, step: Callable[[], torch.Tensor]) -> Callable[[], torch.Tensor] | None:
        """`step` as a CUDA graph: captured now (which runs nothing), replayed by the returned function, whose
        result is the graph's own output buffer (read it before the next replay). Where this model or
        torch cannot be captured, None, said once, and this decoder runs its steps eagerly."""
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                out = step()
        except RuntimeError as exc:
            self.graphs = False
            warnings.warn(f"CUDA graphs unavailable, decoding step by step: {str(exc).splitlines()[0]}",
                          RuntimeWarning, stacklevel=2)
            return None

        def replay() -> torch.Tensor:
            graph.replay()
            return out

        return replay


def _on_side_stream(step: Callable[[], torch.Tensor]) -> torch.Tensor:
    """`step` run on a side stream, as CUDA graphs want their warm-up run, then joined to the current one."""
    side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = step()
    torch.cuda.current_stream().wait_stream(side)
    return out


def stop_checker(tokenizer: Any, stop: Sequence[str]) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """transformers' `StopStringCriteria` for `stop` (None without stop strings): which rows' text ends in
    one, judged on tokens as `generate` judges it."""
    if not stop:
        return None
    from transformers import StopStringCriteria

    criteria = StopStringCriteria(tokenizer, list(stop))
    return lambda sequences: criteria(sequences, None)
