"""`truthfulqa_a2c`: TruthfulQA answered by Ask-to-Choose and scored for accuracy and consistency, read
from a local copy of the benchmark's CSV (`-T csv=TruthfulQA.csv`), so it runs offline."""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample

from a2c.inspect.scorers import consistency, truthfulqa_accuracy
from a2c.inspect.solver import ask_to_choose
from a2c.qa.data.truthfulqa import load_truthfulqa_csv


def truthfulqa_samples(csv: str) -> MemoryDataset:
    """The CSV's questions as inspect samples; the references travel in the metadata for the scorers."""
    records = load_truthfulqa_csv(csv)
    return MemoryDataset([Sample(input=r.question, target=list(r.correct), id=r.id,
                                 metadata={"best_answer": r.best_answer, "correct": list(r.correct),
                                           "incorrect": list(r.incorrect), "category": r.category})
                          for r in records], name="truthfulqa", location=csv)


@task
def truthfulqa_a2c(csv: str, techniques: list[str] | None = None, temperatures: list[float] | None = None,
                   samples: int | None = None, judge: str = "rouge1", similarity: str = "rouge1",
                   seed: int = 0,
                   short_max_tokens: int | None = None, long_max_tokens: int | None = None,
                   paraphrase_max_tokens: int | None = None) -> Task:
    """TruthfulQA through `ask_to_choose`, scored by `truthfulqa_accuracy` and `consistency(judge)`.

    Args:
      csv: path of the benchmark's TruthfulQA.csv.
      techniques: paraphrase techniques (default a2c's).
      temperatures: temperatures the question is sampled at (default a2c's).
      samples: answers per temperature (default 1). Each source needs two or more candidates (techniques;
        temperatures x samples) for its consistency to be defined.
      judge: the a2c judge of the consistency scorer (and of the solver's agreement matrices).
      similarity: the accuracy similarity that labels answers correct for AUROC/PRR.
      seed: the A2C seed.
      short_max_tokens, long_max_tokens, paraphrase_max_tokens: reply budgets (a2c's defaults).
    """
    budgets = {"short_max_tokens": short_max_tokens, "long_max_tokens": long_max_tokens,
               "paraphrase_max_tokens": paraphrase_max_tokens}
    return Task(
        dataset=truthfulqa_samples(csv),
        solver=ask_to_choose(techniques=techniques, temperatures=temperatures, samples=samples,
                             judges=[judge], seed=seed,
                             variation={k: v for k, v in budgets.items() if v is not None}),
        scorer=[truthfulqa_accuracy([similarity, "bleu"] if similarity != "bleu" else ["bleu"]),
                consistency(judge=judge, accuracy=similarity)],
    )
