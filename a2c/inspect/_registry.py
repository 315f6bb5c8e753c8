"""The `inspect_ai` entry point's target: importing it registers a2c's solver, scorers, metrics and task
with inspect, so `inspect eval a2c/truthfulqa_a2c` and `solver=a2c/ask_to_choose` resolve."""

from a2c.inspect import ask_to_choose, auroc, consistency, prr, truthfulqa_a2c, truthfulqa_accuracy

__all__ = ["ask_to_choose", "auroc", "consistency", "prr", "truthfulqa_a2c", "truthfulqa_accuracy"]
