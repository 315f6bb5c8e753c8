"""`a2c view --open`: where no browser can be opened, one line says so, with the address to open by hand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from a2c.system.progress import QUIET_ENV
from tests.view_runs import qa_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qa_run(tmp_path_factory.mktemp("view-open"))


def _browser(folder: Path, exit_status: int) -> Path:
    """A browser command that writes the address it is given to `opened.txt`, then exits `exit_status`."""
    script = folder / "browser.sh"
    script.write_text(f'#!/bin/sh\necho "$1" > "{folder}/opened.txt"\nexit {exit_status}\n', encoding="utf-8")
    script.chmod(0o755)
    return script


def _view(run: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`a2c view RUN --open` with PATH holding no browser of the machine's: only $BROWSER can open it."""
    base = {k: v for k, v in os.environ.items()
            if k not in {*QUIET_ENV, "DISPLAY", "WAYLAND_DISPLAY", "BROWSER"}}
    command = [sys.executable, "-m", "a2c", "view", str(run), "-o", str(tmp_path / "view.html"), "--open"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                            env={**base, "PATH": str(tmp_path / "empty"), **env})
    assert result.returncode == 0, result.stderr[-2000:]
    return result


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="DISPLAY decides only on Linux")
def test_without_a_display_it_says_so_and_names_the_file(run, tmp_path):
    result = _view(run, tmp_path, BROWSER=str(_browser(tmp_path, 0)))
    uri = (tmp_path / "view.html").resolve().as_uri()
    assert result.stdout.strip() == f"written: {tmp_path / 'view.html'}"
    assert result.stderr.strip() == ("a2c: warning: --open: no display to open a browser on (DISPLAY and "
                                     f"WAYLAND_DISPLAY are unset); open {uri} by hand")
    assert not (tmp_path / "opened.txt").exists()  # not even a text browser was started


def test_a_browser_that_fails_is_said_with_the_address(run, tmp_path):
    result = _view(run, tmp_path, DISPLAY=":0", BROWSER=str(_browser(tmp_path, 1)))
    uri = (tmp_path / "view.html").resolve().as_uri()
    assert (tmp_path / "opened.txt").read_text(encoding="utf-8").strip() == uri  # it was asked
    assert result.stderr.strip() == f"a2c: warning: --open: no browser could be opened; open {uri} by hand"


def test_a_browser_that_opens_it_leaves_nothing_to_say(run, tmp_path):
    result = _view(run, tmp_path, DISPLAY=":0", BROWSER=str(_browser(tmp_path, 0)))
    uri = (tmp_path / "view.html").resolve().as_uri()
    assert (tmp_path / "opened.txt").read_text(encoding="utf-8").strip() == uri
    assert result.stderr == ""
