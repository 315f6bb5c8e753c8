"""No path in the docs, the README or the shipped configs leads out of the repository: a user's clone has
nothing beside it, so a `../shared/...` there names a file no reader has.

Each relative path with a `..` part is resolved from its file's folder, as mkdocs resolves a link and a2c a
config's paths: `../concepts/x.md` in `docs/how-to/` stays inside, `output: ../runs/x` in `experiments/`
too. The commands in a markdown file's code blocks run from a clone's root, so their paths are resolved
from the root as well.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# what is scanned, as globs from the root
SCANNED = ("README.md", "docs/**/*.md", "examples/*", "experiments/*.yaml", "mkdocs.yml")

URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S*", re.IGNORECASE)
# a path is a run of characters between these (quotes, brackets, markup, spaces, `=`, `:`, `#`)
TOKEN = re.compile(r"[^\s'\"`()<>\[\]{},;|*!?#=:]+")
FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Outside:
    """A path that leaves the repository: where it is, and the folder it was resolved from."""

    file: str
    line: int
    path: str
    base: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.path} (from {self.base or '.'}/)"


def scanned_files(root: Path) -> list[Path]:
    return sorted({p for pattern in SCANNED for p in root.glob(pattern) if p.is_file()})


def leaves(base: str, path: str) -> bool:
    """Whether `path`, read from the root-relative folder `base`, lands outside the root."""
    resolved = os.path.normpath(os.path.join(base, path))
    return resolved == ".." or resolved.startswith("../")


def outside_paths(root: Path) -> list[Outside]:
    """Every relative path in the scanned files under `root` that resolves outside `root`.

    Args:
        root: the repository (or a tree laid out like it).

    Returns:
        The offenders, in file and line order.
    """
    found = []
    for file in scanned_files(root):
        name = file.relative_to(root).as_posix()
        folder = os.path.dirname(name)
        markdown, in_code = file.suffix == ".md", False
        for number, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if markdown and FENCE.match(line):
                in_code = not in_code
                continue
            bases = [folder, ""] if in_code else [folder]
            for token in TOKEN.findall(URL.sub(" ", line)):
                if token.startswith("/") or ".." not in token.split("/"):
                    continue
                base = next((b for b in dict.fromkeys(bases) if leaves(b, token)), None)
                if base is not None:
                    found.append(Outside(name, number, token, base))
    return found


def test_no_doc_readme_or_config_names_a_path_outside_the_repository():
    assert scanned_files(ROOT), "nothing scanned"
    offenders = outside_paths(ROOT)
    assert not offenders, "paths out of the repository:\n" + "\n".join(map(str, offenders))


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_shared_folder_beside_the_clone_is_flagged(tmp_path):
    write(tmp_path, "README.md", "Read the questions from `../shared/data/questions.csv` first.\n")
    found = [str(o) for o in outside_paths(tmp_path)]
    assert found == ["README.md:1: ../shared/data/questions.csv (from ./)"]


@pytest.mark.parametrize(("name", "text", "flagged"), [
    # links resolve from the page: up one level from docs/how-to/ is docs/
    ("docs/how-to/a.md", "See [Metrics](../concepts/metrics.md#x) and ![p](../assets/p.png).\n", []),
    ("docs/how-to/a.md", "See [data](../../../shared/data.md).\n", ["../../../shared/data.md"]),
    ("docs/how-to/a.md", "<img src=\"../../../x.png\">\n", ["../../../x.png"]),
    # a command in a code block runs from the clone's root
    ("docs/how-to/a.md", "```bash\na2c run ../shared/q.yaml --dataset-path=../data.csv\n```\n",
     ["../shared/q.yaml", "../data.csv"]),
    ("docs/how-to/a.md", "~~~\ncd .. && ls\n~~~\n", [".."]),
    # the same words outside a code block are read from the page's folder
    ("docs/how-to/a.md", "a run name such as `../x` is refused\n", []),
    ("docs/a.md", "ellipses a2c/... and ranges 0..n are no paths; `./x/../y` stays\n", []),
    # configs read their paths from their own folder
    ("experiments/a.yaml", "output: ../runs/a\ndataset: {path: \"../../questions.csv\"}\n",
     ["../../questions.csv"]),
    ("examples/serve.yaml", "generator: {model: ../models/x.gguf}\nlog: ../../serve.log\n",
     ["../../serve.log"]),
    ("mkdocs.yml", "docs_dir: ../docs\nsite_url: https://example.org/a/../b\n", ["../docs"]),
])
def test_the_scanner_resolves_each_path_from_where_it_is_read(tmp_path, name, text, flagged):
    write(tmp_path, name, text)
    assert [o.path for o in outside_paths(tmp_path)] == flagged


def test_files_outside_the_scanned_set_are_not_read(tmp_path):
    write(tmp_path, "tests/notes.md", "../shared/x\n")
    write(tmp_path, "experiments/own.jsonl", "{\"path\": \"../shared/x\"}\n")
    assert outside_paths(tmp_path) == []
