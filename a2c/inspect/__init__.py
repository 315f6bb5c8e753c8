"""a2c inside inspect_ai (the optional `inspect` extra): Ask-to-Choose as a solver, consistency and
TruthfulQA accuracy as scorers, AUROC/PRR of consistency for correctness as metrics, and the example task
`truthfulqa_a2c`. `inspect eval a2c/truthfulqa_a2c` finds them through the `inspect_ai` entry point.

`import a2c` never imports this package, so a2c works without inspect_ai installed.
"""

from a2c.inspect.metrics import auroc, prr
from a2c.inspect.scorers import consistency, truthfulqa_accuracy
from a2c.inspect.solver import ask_to_choose
from a2c.inspect.task import truthfulqa_a2c

__all__ = ["ask_to_choose", "auroc", "consistency", "prr", "truthfulqa_a2c", "truthfulqa_accuracy"]
