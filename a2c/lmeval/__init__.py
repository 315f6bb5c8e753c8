"""a2c with lm-evaluation-harness (the optional `lmeval` extra): `TASKS` is the folder to pass as
`lm_eval --include_path`; it holds `truthfulqa_gen_local`, lm-eval's own `truthfulqa_gen` read from a
local TruthfulQA CSV (`--metadata '{"csv": "TruthfulQA.csv"}'`) where the hub is out of reach.

`import a2c` never imports this package, nor lm-eval."""

from pathlib import Path

TASKS = Path(__file__).parent / "tasks"

__all__ = ["TASKS"]
