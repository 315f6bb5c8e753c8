"""The package as users get it: `python -m build` makes an sdist and, from it, a wheel; `twine check` passes
on both; the wheel installed (not editable) in a fresh virtual environment, the checkout not on its path,
runs `a2c --help`, a scripted run on the shipped prompts, `a2c view`, inspect's `eval` of `a2c/...` through
the entry point and lm-eval's task from the installed task folder. A package file the wheel leaves out
(package data not declared in pyproject.toml) fails here.

The fresh environment gets the heavy dependencies (torch, inspect-ai, lm-eval, ...) from this environment's
site-packages through a directory line in a `.pth` file: `site` adds such a folder to `sys.path` without
reading the `.pth` files inside it, so the editable install's `__editable__` line that puts the checkout on
the path is not applied there. The wheel is built from a copy of the working tree (the files git tracks or
would add), so nothing is written into the checkout.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

import a2c
from tests.view_runs import QA_SCRIPT

ROOT = Path(a2c.__file__).resolve().parent.parent
TRUTHFULQA_SLICE = ROOT / "tests" / "fixtures" / "truthfulqa" / "TruthfulQA-slice.csv"

pytestmark = pytest.mark.timeout(900)

# the env of every command run in the fresh environment: no path, venv or home of this one
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}}

# the cheapest real `a2c run`: scripted answers, two cheap judges, the shipped prompts (no prompt paths)
RUN_CONFIG = f"""\
name: wheel-check
dataset: {{name: quickstart}}
generator: {{backend: scripted, model: {json.dumps(QA_SCRIPT)}}}
variation: {{techniques: [synonyms, word forms], temperatures: [0.5, 1.0]}}
judges: [exact, rouge1]
accuracy: {{similarities: [rouge1]}}
output: run
"""

# in the fresh environment: where a2c was imported from, the site-packages it was installed into, and
# every sys.path entry that holds an importable `a2c` package
WHERE = """\
import json, sys, sysconfig
from pathlib import Path
import a2c
print(json.dumps({"file": a2c.__file__, "purelib": sysconfig.get_path("purelib"), "path": sys.path,
                  "with_a2c": [p for p in sys.path if (Path(p or ".") / "a2c" / "__init__.py").is_file()]}))
"""

# every prompt template and judge preset the installed package ships, loaded by its bare name
SHIPPED = """\
import json
from importlib import resources
from pathlib import Path
from a2c.judges import load_preset
from a2c.prompting.prompts import load_template
from a2c.resources import shipped_or_path
names = {kind: sorted(p.stem for p in Path(str(resources.files(f"a2c.resources.{kind}"))).glob("*.yaml"))
         for kind in ("prompts", "judges")}
for name in names["prompts"]:
    load_template(name)
for name in names["judges"]:
    assert load_preset(name).judges
files = [str(shipped_or_path(f"a2c.resources.{kind}", name)[0]) for kind in names for name in names[kind]]
print(json.dumps({"prompts": names["prompts"], "presets": names["judges"], "files": files}))
"""

# inspect's own `eval` of the task by its registry name (found through the `inspect_ai` entry point), on
# inspect's mock model with usage set (the mock otherwise counts tokens with a tokenizer from the network)
INSPECT_EVAL = """\
import itertools, json, sys
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

replies = itertools.cycle(["1", "Paris", "Which city is it?", "2", "Rome"])

def reply(messages, tools, tool_choice, config):
    output = ModelOutput.from_content(model="mockllm", content=next(replies))
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output

[log] = inspect_eval("a2c/truthfulqa_a2c", model=get_model("mockllm/model", custom_outputs=reply), limit=1,
                     log_dir="logs", display="none",
                     task_args={"csv": sys.argv[1], "techniques": ["synonyms"], "temperatures": [0.5, 1.0]})
sample = log.samples[0]
print(json.dumps({"status": log.status, "task": log.eval.task, "error": str(log.error),
                  "scores": sorted(sample.scores), "a2c": sorted(sample.metadata["a2c"])}))
"""

# lm-eval's TaskManager on the installed task folder alone: the task found, built and its docs read
LMEVAL_TASK = """\
import json, sys
from lm_eval.tasks import TaskManager
from a2c.lmeval import TASKS
manager = TaskManager(include_path=str(TASKS), include_defaults=False, metadata={"csv": sys.argv[1]})
task = manager.load(["truthfulqa_gen_local"])["tasks"]["truthfulqa_gen_local"]
docs = list(task.validation_docs())
print(json.dumps({"tasks": str(TASKS), "found": "truthfulqa_gen_local" in manager.all_tasks,
                  "docs": len(docs), "prompt": task.doc_to_text(docs[0]),
                  "code": task.config.custom_dataset.__code__.co_filename}))
"""


def source_files() -> list[str]:
    """The working tree's files as a clone with these changes would hold them: tracked or not ignored."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tree to build is the files git tracks")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    return sorted(name for name in listed if name and (ROOT / name).is_file())


def copy_tree(dest: Path) -> Path:
    """A copy of the working tree to build from (the build writes its egg-info and build folder there)."""
    for name in source_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return dest


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel: Path


def build(src: Path, out: Path) -> Dists:
    """`python -m build` without isolation (its build requirements are this environment's): the sdist,
    then the wheel from the unpacked sdist, so a file the sdist misses is missing from the wheel too."""
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
                          cwd=src, env=CLEAN_ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    [sdist], [wheel] = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    return Dists(sdist, wheel)


def fresh_venv(root: Path, wheel: Path) -> Path:
    """A new virtual environment with `wheel` installed into it, this one's site-packages as a path line;
    returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    purelib = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                       cwd=root).stdout.strip())
    ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (purelib / "a2c-wheel-test-deps.pth").write_text("".join(f"{p}\n" for p in ours), encoding="utf-8")
    # pip is this environment's, run by the fresh python: it installs into the fresh environment; the
    # editable a2c it sees on the path is left alone (--ignore-installed), and no index is asked
    run(python, "-m", "pip", "install", "--no-deps", "--ignore-installed", "--no-index",
        "--disable-pip-version-check", "--quiet", str(wheel), cwd=root)
    return python


def run(*command: str | Path, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """A command of the fresh environment, outside the checkout and with no PYTHONPATH."""
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=CLEAN_ENV, capture_output=True, text=True,
                          timeout=600)
    if check:
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return done


def installed_package(python: Path, cwd: Path) -> Path:
    return Path(json.loads(run(python, "-c", WHERE, cwd=cwd).stdout)["file"]).parent


def missing_package_files(python: Path, cwd: Path) -> list[str]:
    """The checkout's package files (under `a2c/`, as git lists them) the installed package lacks."""
    package = installed_package(python, cwd)
    return [name for name in source_files() if name.startswith("a2c/")
            and not (package / Path(name).relative_to("a2c")).is_file()]


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    root = tmp_path_factory.mktemp("wheel-build")
    return build(copy_tree(root / "src"), root / "dist")


@pytest.fixture(scope="module")
def python(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_venv(tmp_path_factory.mktemp("wheel-venv") / "venv", dists.wheel)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fresh environment's working folder (not the checkout)."""
    return tmp_path_factory.mktemp("wheel-work")


@pytest.fixture(scope="module")
def scripted_run(python: Path, work: Path) -> Path:
    (work / "experiment.yaml").write_text(RUN_CONFIG, encoding="utf-8")
    done = run(python.parent / "a2c", "run", "experiment.yaml", "--limit", "2", "--no-progress", "--no-cache",
               cwd=work)
    assert "report:" in done.stdout
    return work / "run"


def test_both_distributions_pass_twine_check(dists):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert dists.sdist.name == f"a2c-{version}.tar.gz"
    assert dists.wheel.name == f"a2c-{version}-py3-none-any.whl"
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(dists.sdist),
                           str(dists.wheel)], env=CLEAN_ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


def test_the_fresh_environment_imports_the_wheel_and_not_the_checkout(python, work):
    where = json.loads(run(python, "-c", WHERE, cwd=work).stdout)
    purelib = Path(where["purelib"])
    assert Path(where["file"]).parent == purelib / "a2c"
    assert purelib.is_relative_to(python.parent.parent)
    assert where["with_a2c"] == [str(purelib)]  # the only path entry with an importable a2c
    assert not [p for p in where["path"] if p and Path(p).resolve() == ROOT]
    # this environment's editable install would have put the checkout there: its .pth line names it
    lines = [line.strip() for pth in Path(sysconfig.get_path("purelib")).glob("*.pth")
             for line in pth.read_text(encoding="utf-8").splitlines()]
    if str(ROOT) in lines:
        assert str(ROOT) not in where["path"]


def test_the_installed_package_holds_every_package_file_of_the_checkout(python, work):
    assert missing_package_files(python, work) == []


def test_a2c_help_runs_from_the_installed_script(python, work):
    done = run(python.parent / "a2c", "--help", cwd=work)
    assert done.stdout.startswith("usage: a2c") and "run" in done.stdout and "view" in done.stdout


def test_a_scripted_run_on_the_shipped_prompts_writes_its_report(scripted_run):
    assert (scripted_run / "report.md").read_text(encoding="utf-8").strip()
    summary = json.loads((scripted_run / "summary.json").read_text(encoding="utf-8"))
    assert summary
    # the paraphrase and rank prompts were asked (their templates can only come from the installed package)
    assert (scripted_run / "paraphrases.jsonl").read_text(encoding="utf-8").strip()
    assert (scripted_run / "choices.jsonl").read_text(encoding="utf-8").strip()


def test_the_shipped_prompts_and_judge_presets_load_by_name_from_the_installed_package(python, work):
    done = run(python, "-c", SHIPPED, cwd=work)
    package = installed_package(python, work)
    loaded = json.loads(done.stdout)
    assert {"answer", "paraphrase", "rank"} <= set(loaded["prompts"]) and {"offline", "paper"} <= set(
        loaded["presets"])
    assert all(Path(path).parent.parent == package / "resources" for path in loaded["files"])


def test_a2c_view_writes_the_page_with_the_installed_script_and_style(python, work, scripted_run):
    page = work / "page.html"
    done = run(python.parent / "a2c", "view", str(scripted_run), "-o", str(page), cwd=work)
    assert "written" in done.stdout
    text = page.read_text(encoding="utf-8")
    package = installed_package(python, work)
    assert text.startswith("<!DOCTYPE html>") and 'content="a2c view"' in text  # the template
    assert "<!--A2C:" not in text  # every slot filled
    for name in ("viewer.js", "viewer.css"):
        assert (package / "view" / name).read_text(encoding="utf-8").strip() in text, name


def test_inspect_eval_finds_the_a2c_task_through_the_entry_point(python, work):
    script = work / "inspect_eval.py"
    script.write_text(INSPECT_EVAL, encoding="utf-8")
    data = shutil.copy(TRUTHFULQA_SLICE, work / "TruthfulQA-slice.csv")
    result = json.loads(run(python, script.name, Path(data).name, cwd=work).stdout.splitlines()[-1])
    assert result["status"] == "success", result["error"]
    assert result["task"] == "a2c/truthfulqa_a2c"
    assert result["scores"] == ["consistency", "truthfulqa_accuracy"]
    assert {"answer", "candidates", "choices"} <= set(result["a2c"])


def test_lm_eval_loads_the_task_from_the_installed_task_folder(python, work):
    script = work / "lmeval_task.py"
    script.write_text(LMEVAL_TASK, encoding="utf-8")
    data = shutil.copy(TRUTHFULQA_SLICE, work / "TruthfulQA-slice.csv")
    result = json.loads(run(python, script.name, Path(data).name, cwd=work).stdout.splitlines()[-1])
    tasks = installed_package(python, work) / "lmeval" / "tasks"
    assert Path(result["tasks"]) == tasks
    with TRUTHFULQA_SLICE.open(encoding="utf-8", newline="") as rows:
        first = next(csv.DictReader(rows))["Question"]
    assert result["found"] and result["docs"] == 60
    assert result["prompt"].startswith("Q: ") and result["prompt"].rstrip().endswith(f"Q: {first}")
    assert Path(result["code"]) == tasks / "truthfulqa_local.py"  # the task's functions, from the wheel


def test_a_wheel_missing_a_package_data_file_is_caught(tmp_path, scripted_run):
    """The same checks on a wheel whose pyproject.toml leaves the viewer's style out of its package data:
    the file check names it and `a2c view` fails."""
    src = copy_tree(tmp_path / "src")
    pyproject = src / "pyproject.toml"
    text, found = re.subn(r'"view/\*\.css",\s*', "", pyproject.read_text(encoding="utf-8"))
    assert found == 1
    pyproject.write_text(text, encoding="utf-8")
    python = fresh_venv(tmp_path / "venv", build(src, tmp_path / "dist").wheel)
    assert missing_package_files(python, tmp_path) == ["a2c/view/viewer.css"]
    done = run(python.parent / "a2c", "view", str(scripted_run), "-o", str(tmp_path / "page.html"),
               cwd=tmp_path, check=False)
    assert done.returncode != 0 and "viewer.css" in done.stdout + done.stderr
