"""What the paraphrases' meaning check catches: the variation stage's paraphrases of a config's questions,
with the meaning check on, counted as a run counts them.

Run: `.venv/bin/python benchmarks/paraphrase_meaning.py [--config experiments/quickstart.yaml]
[--dataset-path TruthfulQA.csv] [--limit 128] [--threshold 0.82]` from the repository root. It makes the
paraphrases exactly as the config's variation stage does (its auxiliary model, seed, techniques and the
questions' references) with the config's meaning check, or the default one (the embedding judge at
`a2c.qa.config.DEFAULT_MEANING_THRESHOLD`) when the config has none. The first draws are those a run
without the check keeps or retries by the form checks alone, so one pass gives both sides: how many first
draws passed the form checks, how many of those the check failed as "changed meaning", how many of those a
retry turned into a passing paraphrase, and how many stayed failed; then a few of the caught texts. This
measures counts, not time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("experiments/quickstart.yaml"))
    parser.add_argument("--dataset-path", type=Path, help="the config's dataset file, if it reads one")
    parser.add_argument("--limit", type=int, default=None, help="questions to paraphrase (default: all)")
    parser.add_argument("--threshold", type=float, default=None, help="the check's threshold (default: "
                        "the config's, else the default one)")
    parser.add_argument("--show", type=int, default=8, help="caught paraphrases to print (default 8)")
    args = parser.parse_args()

    from a2c.cli.run import apply_overrides
    from a2c.llm import build_generator
    from a2c.prompting.paraphrase import CHANGED_MEANING, paraphrase_questions
    from a2c.qa.config import MeaningCheckConfig
    from a2c.qa.meaning import meaning_check
    from a2c.qa.task import load_data
    from a2c.run.config_file import load_config

    config = apply_overrides(load_config(args.config), limit=args.limit, no_cache=False,
                             dataset_path=args.dataset_path)
    check = config.variation.meaning_check or MeaningCheckConfig()
    threshold = check.threshold if args.threshold is None else args.threshold
    records = load_data(config)
    aux = build_generator(config.aux_generator or config.generator)
    judge = check.judge.build(aux)
    questions = [r.question for r in records]
    rows = paraphrase_questions(aux, questions, config.variation.resolved_techniques(), seed=config.seed,
                                max_tokens=config.variation.paraphrase_max_tokens,
                                references=[r.references for r in records],
                                meaning=meaning_check(judge, threshold))
    items = [(q, p) for q, row in zip(questions, rows, strict=True) for p in row]
    form_ok = sum(p.first_problem in (None, CHANGED_MEANING) for _, p in items)
    caught = [(q, p) for q, p in items if p.first_problem == CHANGED_MEANING]
    retried = sum(p.ok for _, p in caught)
    still = sum(p.problem == CHANGED_MEANING for _, p in items)
    print(f"{len(questions)} questions, {len(items)} paraphrases ({check.judge.name} judge, threshold "
          f"{threshold:g})")
    print(f"first draws passing the form checks: {form_ok}")
    print(f"  of those failed as changed meaning: {len(caught)} ({len(caught) / max(form_ok, 1):.1%})")
    print(f"  retried into a passing paraphrase:  {retried}")
    print(f"paraphrases failed as changed meaning after the retry: {still}")
    print(f"paraphrases passing every check: {sum(p.ok for _, p in items)}")
    for q, p in caught[:args.show]:
        kept = f"kept: {p.text!r}" if p.ok else f"failed ({p.meaning:.2f})"
        print(f"- {q!r}: {kept}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
