"""Every command block of the README and the site runs from a fresh clone, or says why it cannot.

A fenced block of commands (```` ```bash ````) is preceded by one of three markers; a block without one, or a
fence with no language (commands could hide there: say `bash` or `text`), fails the test:

- `<!-- runnable -->`: each line runs as written.
- `<!-- runnable: stand-in -->`: each line runs with the models stood in for, because a real model run takes
  minutes on 2 cores: the embedded model of a config, of `--backend transformers|vllm` or of a probe without
  a server is the `scripted` backend; every `http://127.0.0.1:PORT/v1` server is one scripted
  OpenAI-compatible server (`tests/fake_openai.py`), which also plays the lines that start a model server.
  A `runs/NAME` the block reads without making it is a scripted quickstart run (made once per session).
- `<!-- not runnable: REASON -->`: the reason is printed where the test lists the blocks it skips.

An `a2c` line goes through `a2c.cli.main` (browsers are not opened) and must exit 0; `a2c serve` runs as a
process until it answers `/health`, then stops. Each block runs in its own folder holding the repository's
`examples/` and `experiments/` (copies, with the scripted generator under stand-in) and the local
TruthfulQA.csv a user would pass.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from a2c.cli import main
from tests.conftest import free_port
from tests.fake_openai import SlowServer
from tests.truthfulqa import TRUTHFULQA

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
MARKER = re.compile(r"<!-- (runnable|runnable: stand-in|not runnable: (?P<reason>.+?)) -->")
COMMAND_LANGUAGES = {"bash", "sh", "shell", "console"}
A2C = re.compile(r"^(?:\.venv(?:-vllm)?/bin/)?a2c\s+")
SERVER_LINE = re.compile(r"^GGUF=|-m (?:llama_cpp\.server|vllm\.entrypoints)")
LOCAL_SERVER = re.compile(r"^http://127\.0\.0\.1:\d+/v1$")
SCRIPTED = {"backend": "scripted", "model": "scripted"}


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    marker: str | None  # "runnable", "runnable: stand-in", "not runnable: ..." or None
    commands: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def command_lines(text: str) -> tuple[str, ...]:
    """A block's commands: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    found = []
    for line in joined.splitlines():
        command = line.split("  #", 1)[0].strip()
        if command and not command.startswith("#"):
            found.append(command)
    return tuple(found)


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        k = 0
        while k < len(lines):
            opened = FENCE.match(lines[k])
            if not opened:
                k += 1
                continue
            end = next(j for j in range(k + 1, len(lines)) if lines[j].strip() == "```")
            before = next((lines[j] for j in range(k - 1, -1, -1) if lines[j].strip()), "")
            marker = MARKER.search(before)
            found.append(Block(str(page.relative_to(ROOT)), k + 1, opened.group(2),
                               marker.group(1) if marker else None,
                               command_lines("\n".join(line.strip() for line in lines[k + 1:end]))))
            k = end + 1
    return found


BLOCKS = blocks()
COMMAND_BLOCKS = [b for b in BLOCKS if b.language in COMMAND_LANGUAGES]
RUNNABLE = [b for b in COMMAND_BLOCKS if b.marker in ("runnable", "runnable: stand-in")]


def test_every_command_block_is_runnable_or_says_why_not():
    unmarked = [b.id for b in COMMAND_BLOCKS if b.marker is None]
    assert unmarked == [], "mark each runnable, runnable: stand-in, or not runnable: why (module docstring)"
    untagged = [b.id for b in BLOCKS if not b.language]
    assert untagged == [], "give these fences a language (bash for commands, text for output)"
    assert len(RUNNABLE) >= 10 and {b.page for b in RUNNABLE} >= {"README.md", "docs/how-to/probe.md"}


def test_an_unmarked_block_is_caught(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("# x\n\n```bash\n.venv/bin/a2c --help\n```\n\n"
                    "<!-- runnable -->\n```bash\na2c --help\n```\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PAGES", [page])
    assert [(b.marker, b.commands) for b in blocks()] == [(None, (".venv/bin/a2c --help",)),
                                                          ("runnable", ("a2c --help",))]


# ---------------------------------------------------------------- running a block


def _with_scripted_generators(folder: Path) -> None:
    """Every experiment config of `folder` generates with the scripted stand-in."""
    for path in folder.glob("*.yaml"):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "name" in data:
            data["generator"] = dict(SCRIPTED)
            path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _stand_in(argv: list[str], server_url: str) -> list[str]:
    """An a2c command line with its models stood in for (see the module docstring)."""
    argv = [server_url if LOCAL_SERVER.match(arg) else arg for arg in argv]
    if "--backend" in argv and argv[argv.index("--backend") + 1] in ("transformers", "vllm"):
        argv[argv.index("--backend") + 1] = "scripted"
        argv = [*argv, "--model", "scripted"] if "--model" not in argv else argv
        argv[argv.index("--model") + 1] = "scripted"
    elif argv[0] == "probe" and "--base-url" not in argv and "--config" not in argv:
        argv += ["--backend", "scripted", "--model", "scripted"]
    return argv


def _serve(argv: list[str], cwd: Path) -> None:
    """`a2c serve ARGV` as a process, until it answers /health; then stopped."""
    port = free_port()
    argv = [a for a in argv if a != "&"]
    if "--port" in argv:
        argv[argv.index("--port") + 1] = str(port)
    else:
        argv += ["--port", str(port)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = cwd / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "a2c", *argv], cwd=cwd, stdout=out,
                                stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 300  # it loads its judges first (170 s on 2 cores at load 19)
        while True:
            assert proc.poll() is None, f"a2c serve exited {proc.returncode}: {log.read_text()}"
            assert time.monotonic() < deadline, f"a2c serve did not answer: {log.read_text()}"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait(30)


@pytest.fixture(scope="session")
def scripted_run(tmp_path_factory) -> Path:
    """The quickstart, run once with the scripted generator: the run a block reads when it makes none."""
    folder = tmp_path_factory.mktemp("scripted-quickstart")
    shutil.copytree(ROOT / "experiments", folder / "experiments")
    _with_scripted_generators(folder / "experiments")
    out = folder / "runs" / "quickstart"
    assert main(["run", str(folder / "experiments" / "quickstart.yaml"), "--output", str(out), "--quiet",
                 "--no-progress"]) == 0
    return out


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_a_runnable_block_runs_from_a_fresh_clone(block, tmp_path, monkeypatch, request):
    stand_in = block.marker == "runnable: stand-in"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(ROOT / "experiments", tmp_path / "experiments")
    (tmp_path / "TruthfulQA.csv").symlink_to(TRUTHFULQA.resolve())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("webbrowser.open", lambda *args, **kwargs: True)
    server = None
    if stand_in:
        _with_scripted_generators(tmp_path / "experiments")
        server = SlowServer(lifetime=600)
        request.addfinalizer(server.stop)
        models = [w for c in block.commands for w in re.findall(r"--model[= ](\S+)", c)]
        server.models = [{"id": name, "object": "model"} for name in (*models, "scripted")]
        makes = " ".join(c for c in block.commands if re.search(r"\ba2c\s+run\b", c))
        for name in sorted({w for c in block.commands for w in re.findall(r"\bruns/[\w.-]+", c)}):
            if not makes:  # read, not made here: a scripted quickstart run stands in
                shutil.copytree(request.getfixturevalue("scripted_run"), tmp_path / name)
    for command in block.commands:
        if stand_in and SERVER_LINE.search(command):
            continue  # the scripted server plays it
        assert A2C.match(command), f"{block.id}: a runnable line is an a2c command: {command}"
        argv = shlex.split(A2C.sub("", command))
        if stand_in:
            argv = _stand_in(argv, server.url if server else "")
        if argv[0] == "score":  # its default output folder sits beside the input, inside the repository
            argv += ["--out", str(tmp_path / "scores")]
        if argv[0] == "serve":
            _serve(argv, tmp_path)
        else:
            assert main([a for a in argv if a != "&"]) == 0, f"{block.id}: {command}"
