"""What the paraphrase rule (a paraphrase of a question stays a question of the same type and states no
reference answer) does to a run: failed paraphrases, consistency and accuracy, with the rule and with the
form checks alone (`a2c.prompting.paraphrase_checks.RULE_VERSION` 1).

Run: `.venv-vllm/bin/python benchmarks/bench_paraphrase_rule.py [--config experiments/truthfulqa-a2c.yaml]
[--limit 64]` from the repository root. Both runs go into temporary folders in one process on one loaded
model and share one fresh request cache, so both see the same first paraphrase of every question and
technique and the same answers wherever they ask the same prompt: the difference is the rule's decisions
and what follows from them (a retried paraphrase, different candidates and rank prompts). It prints the
before → after table of each run and the failed-paraphrase counts side by side. This measures counts and
means, not time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from unittest import mock


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("experiments/truthfulqa-a2c.yaml"))
    parser.add_argument("--dataset-path", type=Path, help="a local TruthfulQA.csv (default: the config's)")
    parser.add_argument("--limit", type=int, default=64, help="questions to run (default 64)")
    args = parser.parse_args()

    import a2c.prompting.paraphrase
    from a2c.cli.run import apply_overrides
    from a2c.qa.task import headline
    from a2c.run.config_file import load_config
    from a2c.run.pipeline import run_experiment

    config = apply_overrides(load_config(args.config), limit=None, no_cache=False,
                             dataset_path=args.dataset_path)
    with tempfile.TemporaryDirectory() as tmp:
        generator = config.generator.model_copy(update={"cache": Path(tmp) / "cache.sqlite"})
        results = {}
        for rule in ("with the rule", "form checks only"):
            run = config.model_copy(update={"limit": args.limit, "generator": generator,
                                            "output": str(Path(tmp) / rule.replace(" ", "-"))})
            if rule == "with the rule":
                results[rule] = run_experiment(run, progress=False)
            else:  # rule version 1: no question, type or reference check
                with mock.patch.object(a2c.prompting.paraphrase, "question_problem", lambda *_, **__: None):
                    results[rule] = run_experiment(run, progress=False)
    for rule, result in results.items():
        counts = result.summary.counts
        print(f"\n## {rule}: {counts.paraphrases_failed} of {counts.paraphrases} paraphrases failed "
              f"({args.limit} questions)\n")
        print(headline(result.summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
