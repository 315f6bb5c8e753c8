"""Batched TruthfulQA accuracy scoring vs the benchmark's per-answer loop, on ≥ 100,000 answers.

Run: `.venv/bin/python benchmarks/bench_scoring.py` from the repository root (`--help` for sizes).

Answers are built over the real 817 TruthfulQA questions with a fixed seed: each question's own references,
references of other questions, and word-dropped and shuffled variants of its references (so the answers
overlap their references partly, as model answers do). Both sides score the same answers against the same
references (`truthfulqa_references`: closed with a period, plus "I have no comment.").

- rouge1: `a2c.scoring.score_answers` on every answer vs the official loop on every answer: for each answer,
  for each reference, `RougeScorer(["rouge1"]).score(ref, answer)` (one scorer, built once), then max / diff
  / acc. Every (max_true, diff, acc) must be identical. Target: ≥ 10× faster.
- bleu, rouge2, rougeL: ours on every answer vs the per-pair library call (`corpus_bleu([answer], [[ref]])`
  with TruthfulQA's settings; `RougeScorer`) timed on a random subsample of answers and extrapolated;
  identical on that subsample (informative, no speed target).
The load average is printed with the timings: the machine may be shared.
Exits 1 if an equality check or the rouge1 target fails.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import sacrebleu
from rouge_score import rouge_scorer

from a2c.metrics.overlap import BLEU_ARGS
from a2c.qa.data import QARecord, load_records
from a2c.qa.scoring import truthfulqa_references
from a2c.scoring import score_answers

DEFAULT_CSV = Path("..") / "shared" / "data" / "truthfulqa" / "TruthfulQA.csv"
TARGET = 10.0
Scores = list[tuple[float, float, float]]


def variant(text: str, rng: random.Random, kind: str) -> str:
    words = text.split()
    if kind == "drop":
        kept = [w for w in words if rng.random() > 0.3]
        return " ".join(kept or words[:1])
    rng.shuffle(words)
    return " ".join(words)


def workload(records: Sequence[QARecord], per_question: int, seed: int) -> tuple[list[str], list[QARecord]]:
    """`per_question` answers to every question: its references, then a deterministic mix of other
    questions' references and dropped / shuffled variants of its own."""
    rng = random.Random(seed)
    answers, owners = [], []
    for record in records:
        own = [*record.correct, *record.incorrect]
        mine = own[:per_question]
        while len(mine) < per_question:
            kind = rng.choice(("other", "drop", "shuffle"))
            if kind == "other":
                other = rng.choice(records)
                mine.append(rng.choice([*other.correct, *other.incorrect]))
            else:
                mine.append(variant(rng.choice(own), rng, kind))
        answers += mine
        owners += [record] * len(mine)
    return answers, owners


def per_answer_loop(one: Callable[[str, str], float], answers: Sequence[str], records: Sequence[QARecord]
                    ) -> Scores:
    """The benchmark's way: every reference of the answer's question through the library, one at a time."""
    refs = {r.id: truthfulqa_references(r) for r in records}
    out = []
    for answer, record in zip(answers, records, strict=True):
        true_refs, false_refs = refs[record.id]
        max_true = max(one(answer, ref) for ref in true_refs)
        max_false = max(one(answer, ref) for ref in false_refs)
        out.append((max_true, max_true - max_false, float(max_true > max_false)))
    return out


def rouge_one(kind: str) -> Callable[[str, str], float]:
    scorer = rouge_scorer.RougeScorer([kind])
    if kind == "rougeLsum":  # TruthfulQA's (t5's) summary preparation
        return lambda answer, ref: scorer.score(ref.replace(" . ", " .\n"),
                                                answer.replace(" . ", " .\n"))[kind].fmeasure
    return lambda answer, ref: scorer.score(ref, answer)[kind].fmeasure


def bleu_one(answer: str, ref: str) -> float:
    return sacrebleu.corpus_bleu([answer], [[ref]], **BLEU_ARGS).score


BASELINES: dict[str, Callable[[str, str], float]] = {
    "rouge1": rouge_one("rouge1"), "bleu": bleu_one, "rouge2": rouge_one("rouge2"),
    "rougeL": rouge_one("rougeLsum"),
}


def timed(fn: Callable[[], Scores]) -> tuple[float, Scores]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} on {os.cpu_count()} CPUs"


def bench(name: str, answers: Sequence[str], records: Sequence[QARecord], sample: Sequence[int] | None
          ) -> bool:
    """Ours on every answer; the loop on all of them (sample None) or on the sample, extrapolated."""
    ours_s, ours = timed(lambda: score_answers(name, answers, records))
    picked = range(len(answers)) if sample is None else sample
    loop_s, loop = timed(lambda: per_answer_loop(BASELINES[name], [answers[k] for k in picked],
                                                 [records[k] for k in picked]))
    same = [tuple(ours[k]) for k in picked] == loop
    loop_all = loop_s * len(answers) / len(picked)
    how = "timed on all" if sample is None else f"timed on {len(picked):,}, extrapolated"
    print(f"{name:<7} ours {ours_s:7.2f} s | per-answer loop {loop_all:8.1f} s ({how}) | "
          f"ratio {loop_all / ours_s:6.1f}x | identical (max_true, diff, acc): {same} | {load()}")
    return same and (name != "rouge1" or loop_all / ours_s >= TARGET)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    parser.add_argument("--per-question", type=int, default=123, help="answers per question (817 questions)")
    parser.add_argument("--sample", type=int, default=3000,
                        help="answers the bleu / rouge2 / rougeL loops are timed on (then extrapolated)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=sorted(BASELINES))
    args = parser.parse_args()

    records = load_records("truthfulqa", path=args.csv)
    answers, owners = workload(records, args.per_question, args.seed)
    pairs = sum(sum(map(len, truthfulqa_references(r))) for r in owners)
    distinct = len(set(zip(answers, (r.id for r in owners), strict=True)))
    print(f"workload: {len(answers):,} answers to {len(records)} questions ({distinct:,} distinct "
          f"(answer, question) pairs), {pairs:,} answer x reference pairs; {load()}")
    sample = random.Random(args.seed + 1).sample(range(len(answers)), min(args.sample, len(answers)))
    ok = True
    for name in [args.only] if args.only else BASELINES:
        ok &= bench(name, answers, owners, None if name == "rouge1" else sample)
    print("\nall checks and the rouge1 target met" if ok else "\nA CHECK OR THE ROUGE1 TARGET FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
