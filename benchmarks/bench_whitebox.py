"""The token-probability signals of `a2c.metrics.whitebox` against LM-Polygraph's estimators, same inputs.

Run: `.venv/bin/python benchmarks/bench_whitebox.py` from the repository root (`--help` for sizes).

Workload (seeded, synthetic): a TruthfulQA-sized run, 817 questions × 11 answers (a main answer and 10
samples) of 20–40 tokens, each position with its top-5 log-probabilities and the chosen token among them;
per question the main answer's similarity to each sample and a cluster id per answer (1–4 classes). Every
measure is computed for every answer (MSP, log-perplexity, mean token entropy) or question (semantic
entropy over the 11 answers, CoCoA-MSP/PPL/MTE of the main answer), first by a2c's batched functions,
then by LM-Polygraph 0.7.0's estimators on `stats` dicts holding the same arrays (its entropy from the
top-k by its EntropyCalculator, as its pipeline computes it). Each side is timed as the best of
`--repeat` runs; building the inputs is not timed. The values are compared (max |difference|) and the
speed ratio printed; the goal is a2c ≥ 10× faster. Without lm-polygraph installed only a2c's side runs.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from a2c.metrics import whitebox as wb

GOAL = 10.0


def workload(questions: int, answers: int, k: int, seed: int) -> dict[str, Any]:
    """Per answer the chosen tokens' log-probs and the L × k top-k; per question similarities and clusters."""
    rng = np.random.default_rng(seed)
    n = questions * answers
    lengths = rng.integers(20, 41, size=n)
    topk, chosen = [], []
    for length in lengths:
        logits = rng.normal(scale=2.0, size=(length, k + 1))  # the extra logit: the vocabulary's rest
        logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        top = np.sort(logp, axis=1)[:, :0:-1].copy()  # the k largest, descending
        topk.append(top)
        chosen.append(top[np.arange(length), rng.integers(0, k, size=length)])
    main = list(range(0, n, answers))
    similarities = [rng.uniform(size=answers - 1) for _ in range(questions)]
    clusters = [rng.integers(0, rng.integers(1, 5), size=answers) for _ in range(questions)]
    return {"chosen": chosen, "topk": topk, "main": main, "similarities": similarities, "clusters": clusters}


def a2c_side(w: dict[str, Any]) -> dict[str, np.ndarray]:
    chosen, topk, main = w["chosen"], w["topk"], w["main"]
    answers = len(chosen) // len(main)
    ll = wb.sequence_log_likelihood(chosen)
    per_question = [ll[i:i + answers] for i in main]
    main_chosen, main_topk = [chosen[i] for i in main], [topk[i] for i in main]
    return {
        "MSP": wb.maximum_sequence_probability(chosen),
        "Perplexity (log)": wb.log_perplexity(chosen),
        "MeanTokenEntropy": wb.mean_token_entropy(topk),
        "SemanticEntropy": wb.weighted_semantic_entropy(per_question, w["clusters"], "monte_carlo",
                                                        normalise=False),
        "CocoaMSP": wb.cocoa_msp(main_chosen, w["similarities"]),
        "CocoaPPL": wb.cocoa_ppl(main_chosen, w["similarities"]),
        "CocoaMTE": wb.cocoa_mte(main_topk, w["similarities"]),
    }


def polygraph_side(w: dict[str, Any]) -> Callable[[], dict[str, np.ndarray]] | None:
    """LM-Polygraph's estimators on the same arrays, or None where it is not installed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from lm_polygraph.estimators import (
                CocoaMSP,
                CocoaMTE,
                CocoaPPL,
                MaximumSequenceProbability,
                MeanTokenEntropy,
                Perplexity,
                SemanticEntropy,
            )
            from lm_polygraph.stat_calculators.entropy import (
                EntropyCalculator,
            )
    except ImportError as error:
        print(f"LM-Polygraph not installed ({error}): only a2c's side is timed "
              "(pip install --no-deps lm-polygraph==0.7.0 and its light dependencies, see pyproject.toml)")
        return None
    chosen, topk, main = w["chosen"], w["topk"], w["main"]
    answers = len(chosen) // len(main)
    class_to_sample, sample_to_class = [], []  # its semantic classes, untimed: its pipeline gives them
    for labels in w["clusters"]:
        _, inverse = np.unique(labels, return_inverse=True)
        sample_to_class.append(inverse.tolist())
        class_to_sample.append([np.flatnonzero(inverse == c).tolist() for c in range(int(inverse.max()) + 1)])
    classes = {"class_to_sample": class_to_sample, "sample_to_class": sample_to_class}
    texts = [[f"s{j}" for j in range(answers)] for _ in main]
    main_chosen, main_topk = [chosen[i] for i in main], [topk[i] for i in main]

    def run() -> dict[str, np.ndarray]:
        entropy = EntropyCalculator()({"greedy_log_probs": topk})
        lls = [np.sum(c) for c in chosen]
        sample_lls = [lls[i:i + answers] for i in main]
        main_stats = {"greedy_log_likelihoods": main_chosen, "greedy_sentence_similarity": w["similarities"],
                      **EntropyCalculator()({"greedy_log_probs": main_topk})}
        return {
            "MSP": MaximumSequenceProbability()({"greedy_log_likelihoods": chosen}),
            "Perplexity (log)": Perplexity()({"greedy_log_likelihoods": chosen}),
            "MeanTokenEntropy": MeanTokenEntropy()(entropy),
            "SemanticEntropy": SemanticEntropy()({"sample_log_probs": sample_lls, "sample_texts": texts,
                                                  "semantic_classes_entail": classes}),
            "CocoaMSP": CocoaMSP()(main_stats),
            "CocoaPPL": CocoaPPL()(main_stats),
            "CocoaMTE": CocoaMTE()(main_stats),
        }

    return run


def best_of(repeat: int, fn: Callable[[], dict[str, np.ndarray]]) -> tuple[float, dict[str, np.ndarray]]:
    times, out = [], {}
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=817)
    parser.add_argument("--answers", type=int, default=11, help="per question: the main answer and samples")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    w = workload(args.questions, args.answers, args.top_k, args.seed)
    tokens = sum(len(c) for c in w["chosen"])
    print(f"{args.questions} questions × {args.answers} answers, {tokens} tokens, top-{args.top_k}; "
          f"load average {os.getloadavg()[0]:.1f}")
    ours_s, ours = best_of(args.repeat, lambda: a2c_side(w))
    print(f"a2c (batched):  {ours_s * 1000:8.1f} ms")
    theirs_fn = polygraph_side(w)
    if theirs_fn is None:
        return
    theirs_s, theirs = best_of(args.repeat, theirs_fn)
    print(f"LM-Polygraph:   {theirs_s * 1000:8.1f} ms")
    for name, values in ours.items():
        gap = np.max(np.abs(values - np.asarray(theirs[name])))
        print(f"  {name:18s} max |a2c − LM-Polygraph| = {gap:.2e}")
    ratio = theirs_s / ours_s
    verdict = "" if ratio >= GOAL else " — below the goal"
    print(f"ratio: a2c is {ratio:.1f}× faster (goal ≥ {GOAL:.0f}×){verdict}")


if __name__ == "__main__":
    main()
