"""The inspect and lmeval extras stay optional: `import a2c` (and the modules a run loads) import neither
harness, and the package declares both extras and the inspect entry point that `inspect eval` reads."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_importing_a2c_imports_neither_inspect_ai_nor_lm_eval():
    code = ("import sys, a2c, a2c.scoring, a2c.choose, a2c.run.pipeline, a2c.cli, a2c.serve.schema\n"
            "found = sorted({m.split('.')[0] for m in sys.modules} & {'inspect_ai', 'lm_eval'})\n"
            "assert not found, found")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_extras_and_the_inspect_entry_point_are_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert any(r.startswith("inspect-ai") for r in extras["inspect"])
    assert any(r.startswith("lm-eval") for r in extras["lmeval"])
    assert not any("inspect" in d or "lm-eval" in d for d in project["dependencies"])
    assert project["entry-points"]["inspect_ai"] == {"a2c": "a2c.inspect._registry"}
