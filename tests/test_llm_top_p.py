"""The exact top-p of `a2c.llm.top_p`: vLLM's rule (keep a token while the mass ranked above it is below
p, the most likely one always) on worked examples and random distributions, and the same kept set whether
the k-token prefilter decides a row or the full sort does. Against vLLM's own sampler on real model logits:
tests/test_llm_nucleus.py (needs the vllm extra)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from a2c.llm.top_p import TOP_P_ARG, mask_rows, nucleus_mask, sampling_args


def reference_mask(probs: np.ndarray, p: float) -> np.ndarray:
    """vLLM's formulation in float64: sort ascending, drop tokens whose cumulative mass is at most 1 - p,
    keep the largest."""
    order = np.argsort(probs, kind="stable")
    cumulative = np.cumsum(probs[order])
    dropped = cumulative <= 1 - p
    dropped[-1] = False
    keep = np.ones_like(probs, dtype=bool)
    keep[order[dropped]] = False
    return keep


@pytest.mark.parametrize(("p", "kept"), [(0.5, 1), (0.51, 2), (0.7, 2), (0.8, 2), (0.81, 3), (0.96, 4)])
def test_worked_example(p, kept):
    # above each token: 0, 0.5, 0.8, 0.95 -> kept while that is below p
    probs = torch.tensor([[0.05, 0.5, 0.15, 0.3]], dtype=torch.float64)
    mask = nucleus_mask(probs, torch.tensor([p], dtype=torch.float64))
    expected = {1: [1], 2: [1, 3], 3: [1, 2, 3], 4: [0, 1, 2, 3]}[kept]
    assert mask[0].nonzero().flatten().tolist() == expected


def test_rows_decided_by_the_prefilter_and_by_the_full_sort_agree():
    generator = torch.Generator().manual_seed(0)
    scale = torch.linspace(0.5, 8, 64)[:, None]  # from flat rows to peaked ones
    logits = torch.randn(64, 5000, generator=generator, dtype=torch.float64) * scale
    probs = logits.softmax(dim=-1)
    top_p = torch.full((64,), 0.9, dtype=torch.float64)
    narrow = nucleus_mask(probs, top_p, k=8)  # flat rows fall back to the sort, peaked ones do not
    decided = probs.topk(8).values.sum(dim=-1) >= 0.9
    assert 0 < int(decided.sum()) < 64  # both paths are taken
    assert torch.equal(narrow, nucleus_mask(probs, top_p, k=5000))  # k = vocabulary: every row by top-k
    for row in range(64):
        assert np.array_equal(narrow[row].numpy(), reference_mask(probs[row].numpy(), 0.9))


@settings(max_examples=200)
@given(weights=st.lists(st.floats(0.001, 1.0), min_size=2, max_size=40, unique=True),
       p=st.floats(0.05, 0.99), k=st.integers(1, 8))
def test_same_kept_set_as_vllms_rule(weights, p, k):
    probs = np.asarray(weights) / np.sum(weights)
    above = np.sort(probs)[::-1].cumsum() - np.sort(probs)[::-1]
    assume(np.min(np.abs(above - p)) > 1e-9)  # a token exactly at the boundary is a rounding question
    assume(np.min(np.diff(np.sort(probs))) > 1e-12)  # so is the order of two tokens 1 ulp apart
    mask = nucleus_mask(torch.from_numpy(probs)[None], torch.tensor([p], dtype=torch.float64), k=k)
    assert np.array_equal(mask[0].numpy(), reference_mask(probs, p))
    assert mask[0][int(np.argmax(probs))]  # the most likely token is always kept


def test_sampling_args_switch_vllms_top_p_off_only_for_sampled_requests():
    assert sampling_args(0.7, 0.6) == {"top_p": 1.0, "extra_args": {TOP_P_ARG: 0.7}}
    assert sampling_args(0.7, 0.0) == {"top_p": 0.7}  # greedy: vLLM ignores top-p anyway
    assert sampling_args(1.0, 0.6) == {"top_p": 1.0}  # no nucleus to take


@pytest.mark.parametrize("rows", [{0: 0.5, 1: 0.9, 2: 0.3}, {1: 0.8}, {}])
def test_the_engine_s_masking_keeps_each_listed_row_s_nucleus_and_leaves_the_others(rows):
    """`mask_rows` is what vLLM's engine runs (`vllm_nucleus.NucleusPrefilter.apply`): the same code on the
    CPU here as on CUDA tensors there, every tensor it makes on the logits' device."""
    logits = torch.randn(3, 300, generator=torch.Generator().manual_seed(1)) * 3
    before = logits.clone()
    out = mask_rows(logits, rows)
    assert out.device == before.device and out.dtype == before.dtype
    for row in range(3):
        if row not in rows:
            assert torch.equal(out[row], before[row])
            continue
        probs = before[row].softmax(dim=-1, dtype=torch.float32).double().numpy()
        assert np.array_equal(torch.isfinite(out[row]).numpy(), reference_mask(probs, rows[row]))
        kept = torch.isfinite(out[row])
        assert torch.equal(out[row][kept], before[row][kept])  # kept logits unchanged
