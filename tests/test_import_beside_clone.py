"""A script in the folder that holds a clone named `a2c` (as the install page names it) imports the package.

Python puts the script's folder first on `sys.path`, so the clone itself, a folder named `a2c` with no
`__init__.py`, is a namespace-package candidate for `import a2c`. Regular packages on any `sys.path` entry
win over namespace portions, which is why `make setup` installs a2c editable in setuptools' `compat` mode
(the checkout's root on `sys.path` through a `.pth` file): the real package is found there. A finder on
`sys.meta_path` (the default editable mode) is asked only after the path, too late.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import a2c

REPO = Path(a2c.__file__).resolve().parent.parent

SCRIPT = """\
import a2c
from a2c.judges import Judge
from a2c.prompting.prompts import load_template
load_template("rank")
print(a2c.__file__)
print(Judge.__module__)
"""


def _beside_clone(tmp_path: Path, name: str = "a2c") -> Path:
    """A folder holding the checkout under `name` (a link to it) and a script beside it."""
    (tmp_path / name).symlink_to(REPO, target_is_directory=True)
    script = tmp_path / "use_a2c.py"
    script.write_text(SCRIPT, encoding="utf-8")
    return script


def test_a_script_beside_a_clone_named_a2c_imports_the_package(tmp_path):
    script = _beside_clone(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found, module = done.stdout.splitlines()
    assert Path(found).resolve() == REPO / "a2c" / "__init__.py"
    assert module.startswith("a2c.judges")


def test_the_checkout_root_holds_no_resource_links_that_import_as_packages():
    """`judges` or `prompts` at the root would be importable top-level packages (the root is on the path)."""
    assert not [p.name for p in REPO.iterdir() if p.is_symlink()]
