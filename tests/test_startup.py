"""`a2c --help`, a typo and a config error print before any heavy library loads: the parsers and a config
check import no numpy, torch, transformers, scipy, scikit-learn or nltk, nor a task's stages
(`benchmarks/bench_startup.py` times it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("numpy", "torch", "transformers", "scipy", "sklearn", "nltk", "rouge_score", "matplotlib",
         "sentence_transformers", "a2c.qa.stages", "a2c.judges.hf")
PROBE = """
import json, sys
{prelude}
from a2c.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy} if m in sys.modules)), file=sys.stderr)
"""


def loaded_after(argv: list[str], cwd: Path, prelude: str = "") -> list[str]:
    """The heavy modules loaded once `a2c ARGV` has run in a fresh interpreter (after `prelude`)."""
    root = Path(__file__).resolve().parents[1]
    code = PROBE.format(heavy=HEAVY, prelude=prelude)
    done = subprocess.run([sys.executable, "-c", code, *argv], cwd=cwd, text=True,
                          capture_output=True, env={"PYTHONPATH": str(root), "PATH": ""}, timeout=120)
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["--help"], ["rnu"], ["run", "--help"], ["run", "bad.yaml"],
                                  ["run", "missing.yaml"]])
def test_parsers_and_a_config_error_load_no_heavy_library(tmp_path, argv):
    (tmp_path / "bad.yaml").write_text("name: bad\ngenerater: {backend: openai}\n", encoding="utf-8")
    assert loaded_after(argv, tmp_path) == []


def test_the_probe_sees_a_heavy_import(tmp_path):
    """The check can fail: a module that does load scipy is seen."""
    assert loaded_after(["--help"], tmp_path, prelude="import a2c.metrics.agreement; "
                        "a2c.metrics.agreement.spearman_rho([1, 2, 3], [1, 3, 2])") == ["numpy", "scipy"]
