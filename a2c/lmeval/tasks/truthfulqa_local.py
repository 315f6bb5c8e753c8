"""The dataset of `truthfulqa_gen_local`: lm-eval loads this file by path (a YAML `!function`). Questions
come from a local TruthfulQA CSV read by a2c's checked loader, in the hub dataset's layout; everything else
is lm-eval's own `truthfulqa_gen`, imported, not copied: `process_docs_gen` and `process_results_gen` from
its utils, and the prompt from its own task YAML, rendered as lm-eval renders it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lm_eval.tasks._yaml_loader import load_yaml
from lm_eval.tasks.truthfulqa import utils
from lm_eval.tasks.truthfulqa.utils import process_docs_gen, process_results_gen
from lm_eval.utils import apply_template

from a2c.common.errors import A2CError
from a2c.qa.data.truthfulqa import load_truthfulqa_csv

# lm-eval's own truthfulqa_gen task, whose prompt this task asks
BUILT_IN = load_yaml(Path(utils.__file__).with_name("truthfulqa_gen.yaml"), resolve_func=False)


def doc_to_text(doc: dict[str, Any]) -> str:
    """The built-in task's prompt (six-shot QA primer, then the question), rendered by lm-eval's Jinja."""
    text: str = apply_template(BUILT_IN["doc_to_text"], doc)
    return text


def load_csv(csv: str | None = None, **_: Any) -> Any:
    """lm-eval's `custom_dataset`: `--metadata '{"csv": ...}'` arrives here as `csv`. The rows carry the
    hub's `generation` columns (correct answers including the best one)."""
    import datasets

    if not csv:
        raise A2CError("truthfulqa_gen_local needs the TruthfulQA CSV: "
                       "--metadata '{\"csv\": \"TruthfulQA.csv\"}'")
    rows = [{"type": "", "category": r.category, "question": r.question, "best_answer": r.best_answer or "",
             "correct_answers": list(r.correct), "incorrect_answers": list(r.incorrect), "source": ""}
            for r in load_truthfulqa_csv(csv)]
    return datasets.DatasetDict({"validation": datasets.Dataset.from_list(rows)})


__all__ = ["doc_to_text", "load_csv", "process_docs_gen", "process_results_gen"]
