"""Outside plug-ins (`a2c.common.registry`): a tiny distribution written here, with a judge, a set metric and
a backend declared as entry points, is installed by pip into a folder of its own; a2c started with that
folder on its path finds each of them by name in a run, the report, `a2c compare`, the command line's
listings and the generated registries page, and imports none of them until named. A plug-in that raises
on import, one shadowing a built-in name and a misspelt name each get their one line.

Every check runs a2c in a subprocess: entry points are read from the installed metadata once per
process, so the test process (without the plug-ins on its path) is left as it was."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.view_runs import QA_SCRIPT

ROOT = Path(__file__).resolve().parent.parent

PLUGIN = '''\
"""A test plug-in of a2c: a judge, a set metric and a backend."""

from collections.abc import Sequence
from typing import ClassVar, Literal

from a2c.judges.base import Pair, PairwiseJudge
from a2c.llm.config import GeneratorConfig
from a2c.llm.scripted import ScriptedBackend
from a2c.metrics.set_metrics import AnswerSet, SetMetric


class LengthJudge(PairwiseJudge):
    """Answers agree as far as their lengths do (a plug-in judge)."""

    name = "demo_length"
    label = "DemoLen"
    cacheable = False

    def score_pairs(self, pairs: Sequence[Pair]):
        import numpy as np

        return np.array([min(len(p.a), len(p.b)) / max(len(p.a), len(p.b), 1) for p in pairs])


def mean_chars(answers: AnswerSet) -> float | None:
    return sum(map(len, answers.texts)) / len(answers.texts) if answers.texts else None


CHARS = SetMetric("DemoChars", higher_is_better=False, compute=mean_chars)


class ShoutConfig(GeneratorConfig):
    """The scripted model's replies in capitals (a plug-in backend)."""

    backend: Literal["demo_shout"] = "demo_shout"
    backend_at: ClassVar[str] = "a2c_demo_plugin:ShoutBackend.from_config"


class ShoutBackend(ScriptedBackend):
    backend = "demo_shout"

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.replies = tuple(reply.upper() for reply in self.replies)
'''

PYPROJECT = '''\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1"

[project.entry-points."a2c.judges"]
{judges}

[project.entry-points."a2c.metrics"]
{metrics}

[project.entry-points."a2c.backends"]
{backends}

[tool.setuptools]
py-modules = ["{module}"]
'''


def _distribution(folder: Path, name: str, module: str, code: str, *, judges: str, metrics: str = "",
                  backends: str = "") -> Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text(PYPROJECT.format(name=name, module=module, judges=judges,
                                                            metrics=metrics, backends=backends),
                                           encoding="utf-8")
    (folder / f"{module}.py").write_text(code, encoding="utf-8")
    return folder


def _install(source: Path, target: Path) -> Path:
    """`pip install` of a source folder into `target` (offline: no index, no build isolation)."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--target", str(target), str(source)],
                   check=True, capture_output=True, text=True, timeout=300)
    return target


@pytest.fixture(scope="module")
def plugins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo plug-in and a broken one (its module raises; it also declares the built-in `exact`), each
    installed into a folder of its own."""
    root = tmp_path_factory.mktemp("plugins")
    demo = _distribution(root / "demo", "a2c-demo-plugin", "a2c_demo_plugin", PLUGIN,
                         judges='demo_length = "a2c_demo_plugin:LengthJudge"',
                         metrics='demo_chars = "a2c_demo_plugin:CHARS"',
                         backends='demo_shout = "a2c_demo_plugin:ShoutConfig"')
    broken = _distribution(root / "broken", "a2c-broken-plugin", "a2c_broken_plugin",
                           'raise RuntimeError("this plug-in needs a GPU driver\\nsecond line")\n',
                           judges='broken = "a2c_broken_plugin:Judge"\nexact = "a2c_broken_plugin:Judge"')
    return {"demo": _install(demo, root / "site-demo"), "broken": _install(broken, root / "site-broken")}


def a2c(*args: str, path: Path | list[Path], cwd: Path, code: str | None = None
        ) -> subprocess.CompletedProcess[str]:
    """`python -m a2c ARGS` (or `python -c CODE`) with the plug-in folders on PYTHONPATH."""
    folders = path if isinstance(path, list) else [path]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, folders), str(ROOT)]),
           "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", "a2c", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _config(folder: Path, name: str, seed: int, judges: str = "[exact, demo_length]") -> Path:
    script = QA_SCRIPT.replace("'", "''")
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: {name}
        limit: 3
        seed: {seed}
        output: {folder / name}
        generator: {{backend: demo_shout, model: '{script}', cache: {folder / 'cache.sqlite'}}}
        judges: {judges}
        accuracy: {{similarities: [rouge1]}}
        """), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(plugins: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two finished runs (`a2c run`) on the plug-in backend, judged by the plug-in judge."""
    folder = tmp_path_factory.mktemp("runs")
    for name, seed in (("p0", 0), ("p1", 1)):
        done = a2c("run", "--no-progress", str(_config(folder, name, seed)), path=plugins["demo"], cwd=folder)
        assert done.returncode == 0, done.stderr
    return folder / "p0", folder / "p1"


def test_a_run_uses_the_plugin_backend_judge_and_metric(runs):
    import numpy as np

    from a2c.qa.rows import GENERATIONS, METRICS
    from a2c.run.store import RunFolder

    folder = RunFolder(runs[0])
    answers = [row.short for row in folder.read_rows(GENERATIONS)]
    assert answers and all(a == a.upper() for a in answers) and any(a != a.lower() for a in answers)
    assert "backend: demo_shout" in (runs[0] / "config.yaml").read_text(encoding="utf-8")
    row = folder.read_rows(METRICS)[0]
    assert set(row.judges) == {"exact", "demo_length"} and row.extra["demo_chars"] is not None
    with np.load(runs[0] / "matrices_before.npz") as matrices:
        assert any("demo_length" in key for key in matrices.files)


def test_the_report_and_the_comparison_show_the_plugins_labels(runs, plugins):
    report = (runs[0] / "report.md").read_text(encoding="utf-8")
    assert "DemoLen" in report and "DemoChars" in report
    done = a2c("compare", str(runs[0]), str(runs[1]), "-o", str(runs[0].parent / "cmp"),
               path=plugins["demo"], cwd=runs[0].parent)
    assert done.returncode == 0, done.stderr
    assert "DemoLen" in done.stdout and "DemoChars" in done.stdout


def test_the_command_line_lists_the_plugin_names(plugins, tmp_path):
    for command in (["probe", "--help"], ["serve", "--help"]):
        done = a2c(*command, path=plugins["demo"], cwd=tmp_path)
        assert done.returncode == 0 and "demo_shout" in done.stdout, done.stderr
    done = a2c("judge", "--list", path=plugins["demo"], cwd=tmp_path)
    assert "demo_length" in done.stdout.splitlines()[0], done.stderr
    without = a2c("probe", "--help", path=[], cwd=tmp_path)
    assert "demo_shout" not in without.stdout  # the test can fail: the name comes from the install


def test_the_registries_page_lists_them_with_their_distribution(plugins, tmp_path):
    code = ("import sys; sys.path.insert(0, 'docs/hooks'); from reference import registries_page; "
            "print(registries_page())")
    done = a2c(path=plugins["demo"], cwd=ROOT, code=code)
    assert done.returncode == 0, done.stderr
    for name in ("demo_length", "demo_chars", "demo_shout"):
        row = next(line for line in done.stdout.splitlines() if line.startswith(f"| `{name}` |"))
        assert "(plug-in from `a2c-demo-plugin`)" in row
    assert "`a2c.judges.base.JUDGES` · plug-ins: entry-point group `a2c.judges`" in done.stdout


def test_listing_names_imports_no_plugin(plugins, tmp_path):
    code = ("import sys; from a2c.judges import JUDGES; from a2c.llm.config import BACKENDS; "
            "from a2c.metrics.set_metrics import SET_METRICS; "
            "assert 'demo_length' in JUDGES.names() and 'demo_shout' in BACKENDS.names(); "
            "assert 'demo_chars' in SET_METRICS; "
            "assert 'a2c_demo_plugin' not in sys.modules; "
            "assert JUDGES.get('demo_length').label == 'DemoLen'; "
            "assert 'a2c_demo_plugin' in sys.modules; print('ok')")
    done = a2c(path=plugins["demo"], cwd=tmp_path, code=code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_an_unknown_name_lists_the_plugins_and_says_where_they_come_from(plugins, tmp_path):
    done = a2c("judge", "-j", "demo_lenght", "a", "b", path=plugins["demo"], cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("a2c: error: unknown judge 'demo_lenght'. Did you mean 'demo_length'?")
    assert "demo_length, embedding" in line and line.endswith(
        "Plug-ins add names through the entry-point group a2c.judges.")


def test_a_plugin_that_fails_to_import_is_one_line_when_named(plugins, tmp_path):
    both = [plugins["demo"], plugins["broken"]]
    listed = a2c("judge", "--list", path=both, cwd=tmp_path)
    assert listed.returncode == 0 and "broken" in listed.stdout  # listed without importing it
    # the broken distribution's `exact` is not used: the built-in wins, with one warning line
    assert ("a2c: warning: judge 'exact' is built in: the entry point `exact = a2c_broken_plugin:Judge` "
            "of 'a2c-broken-plugin' (group a2c.judges) is not used") in listed.stderr.splitlines()
    done = a2c("judge", "-j", "broken", "a", "b", path=both, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "a2c: error: judge 'broken' comes from the entry point `broken = a2c_broken_plugin:Judge` of "
        "'a2c-broken-plugin' (group a2c.judges), which cannot be loaded: RuntimeError: this plug-in needs "
        "a GPU driver")
    config = _config(tmp_path, "bad", 0, judges="[exact, broken]")
    done = a2c("run", str(config), path=both, cwd=tmp_path)
    assert done.returncode == 2
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(f"a2c: error: invalid config: {config}:6: judges.1.name: ")
    assert "judge 'broken' comes from the entry point" in error and not (tmp_path / "bad").exists()


def test_a_name_two_distributions_declare_is_refused_when_used(plugins, tmp_path):
    from a2c.common.registry import PluginError, Registry

    code = ("from a2c.judges import JUDGES; JUDGES.get('demo_length')")
    twice = tmp_path / "twice"
    twice.mkdir()
    _install(_distribution(tmp_path / "again", "a2c-demo-again", "a2c_demo_again", "",
                           judges='demo_length = "a2c_demo_plugin:LengthJudge"'), twice)
    done = a2c(path=[plugins["demo"], twice], cwd=tmp_path, code=code)
    assert done.returncode != 0
    assert PluginError.__name__ in done.stderr and "declared by more than one plug-in" in done.stderr
    assert "'a2c-demo-plugin'" in done.stderr and "'a2c-demo-again'" in done.stderr
    assert Registry("judge").names() == []  # a registry without a group reads no entry points


def test_a_plugin_backends_options_are_checked_by_its_own_model(plugins, tmp_path):
    """Keyed by option with the file's line, as a built-in backend's are."""
    config = _config(tmp_path, "opts", 0)
    written = config.read_text(encoding="utf-8")
    for option, message in (("batch_size: 3", "generator.batch_size: not an option of the demo_shout backend "
                                              "(it is one of transformers, vllm)"),
                            ("shuot: 1", "generator.shuot: unknown key")):
        config.write_text(written.replace("{backend: demo_shout,", f"{{backend: demo_shout, {option},"),
                          encoding="utf-8")
        done = a2c("run", str(config), path=plugins["demo"], cwd=tmp_path)
        assert done.returncode == 2
        [line] = done.stderr.strip().splitlines()
        assert line == f"a2c: error: invalid config: {config}:5: {message}"
