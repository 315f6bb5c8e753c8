"""The batched row sampler on CPU tensors: its nucleus is the top-p rule, a row's draws depend on its own
seed and step alone, and the draws follow the renormalised nucleus distribution."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from a2c.llm.row_sampler import RowSampler, mix32, seed_keys, uniforms


def reference_nucleus(probs: list[float], top_p: float) -> set[int]:
    """The top-p rule written plainly: walk the tokens from most to least likely, keep each while the mass
    before it is below p (the first always; every one at p = 1)."""
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    kept, mass = set(), 0.0
    for i in order:
        if kept and mass >= top_p and top_p < 1.0:
            break
        kept.add(i)
        mass += probs[i]
    return kept


def random_logits(rows: int, vocab: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, vocab, generator=g) * 3.0


@pytest.mark.parametrize("vocab", [40, 1000])  # a narrow nucleus (top-k candidates) and wide ones
def test_nucleus_is_the_top_p_rule_at_each_rows_temperature(vocab):
    scores = random_logits(6, vocab, seed=vocab)
    temperatures, top_ps = [0.5, 1.0, 1.5, 0.7, 2.0, 1.0], [0.3, 0.7, 0.95, 1.0, 0.9, 0.05]
    sampler = RowSampler(temperatures, top_ps, list(range(6)), "cpu")
    weights, tokens = sampler.nucleus(scores)
    tokens = tokens.expand_as(weights)
    for row, (t, p) in enumerate(zip(temperatures, top_ps, strict=True)):
        probs = torch.softmax(scores[row] / torch.tensor(t), dim=-1)  # float32, as the sampler's
        expected = reference_nucleus(probs.tolist(), p)
        got = {int(tok) for tok, w in zip(tokens[row], weights[row], strict=True) if w > 0}
        assert got == expected
        kept = tokens[row][weights[row] > 0]
        torch.testing.assert_close(weights[row][weights[row] > 0], probs[kept])


def test_greedy_rows_take_the_argmax_beside_sampled_rows():
    scores = random_logits(4, 500, seed=1)
    sampler = RowSampler([0.0, 1.0, 0.0, 0.8], [1.0, 0.9, 0.5, 1.0], [3, 4, None, 6], "cpu")
    for _ in range(5):
        picks = sampler.pick(scores)
        assert picks[0] == scores[0].argmax() and picks[2] == scores[2].argmax()


def draws(temperatures, top_ps, seeds, scores, steps):
    sampler = RowSampler(temperatures, top_ps, seeds, "cpu")
    return torch.stack([sampler.pick(scores) for _ in range(steps)], dim=1)


def test_a_rows_draws_depend_on_its_own_seed_and_step_only():
    scores = random_logits(5, 300, seed=2)
    rows = [(0.9, 0.9, 11), (1.2, 1.0, 12), (0.0, 1.0, 13), (0.6, 0.7, 14), (1.0, 0.95, 2**40 + 5)]
    temperatures, top_ps, seeds = (list(column) for column in zip(*rows, strict=True))
    batch = draws(temperatures, top_ps, seeds, scores, 30)
    for index, (t, p, s) in enumerate(rows):
        alone = draws([t], [p], [s], scores[index:index + 1], 30)
        assert torch.equal(alone[0], batch[index])
    assert torch.equal(draws(temperatures, top_ps, seeds, scores, 30), batch)
    other = draws([0.9], [0.9], [99], scores[:1], 30)
    assert not torch.equal(other[0], batch[0])
    assert len(set(batch[1].tolist())) > 5  # a wide nucleus at 1.2 varies from step to step


def test_rows_without_a_seed_get_fresh_noise():
    keys = seed_keys([None, None, 7, 7], "cpu")
    assert keys[0] != keys[1] and keys[2] == keys[3]


def test_hash_stays_in_32_bits_and_uniforms_in_the_open_interval():
    extremes = torch.tensor([0, 1, 2**31 - 1, 2**31, 2**32 - 1], dtype=torch.int64)
    hashed = mix32(extremes)
    assert bool((hashed >= 0).all()) and bool((hashed < 2**32).all()) and len(set(hashed.tolist())) == 5
    u = uniforms(seed_keys([0, -1, 2**64 - 1], "cpu"), 2**40, extremes[None, :])
    assert bool((u > 0).all()) and bool((u < 1).all())


def nucleus_distribution(logits: torch.Tensor, temperature: float, top_p: float) -> np.ndarray:
    probs = torch.softmax(logits.double() / temperature, dim=-1).numpy()
    kept = sorted(reference_nucleus(probs.tolist(), top_p))
    out = np.zeros_like(probs)
    out[kept] = probs[kept] / probs[kept].sum()
    return out


@pytest.mark.parametrize(("temperature", "top_p"), [(0.7, 0.7), (1.0, 0.95), (1.3, 1.0)])
def test_draw_frequencies_match_the_renormalised_nucleus(temperature, top_p):
    """Across seeds (one batch of 40 000 rows, one step) and across steps (one seed, 4 000 steps), a
    chi-square test at alpha 1e-4 against p renormalised over the nucleus; no token outside it is drawn."""
    vocab = 30
    logits = random_logits(1, vocab, seed=5)[0] / 3  # flat enough for several tokens in each nucleus
    expected = nucleus_distribution(logits, temperature, top_p)
    rows = 40_000
    batch = logits.expand(rows, vocab)
    across_seeds = draws([temperature] * rows, [top_p] * rows, list(range(rows)), batch, 1)
    across_steps = draws([temperature], [top_p], [123], logits[None, :], 4_000)
    for picks in (across_seeds.flatten(), across_steps.flatten()):
        counts = np.bincount(picks.numpy(), minlength=vocab)
        support = expected > 0
        assert counts[~support].sum() == 0
        result = chisquare(counts[support], expected[support] * counts.sum())
        assert result.pvalue > 1e-4, (counts, expected)
