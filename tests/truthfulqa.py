"""The TruthfulQA CSV the tests read, from one place.

The benchmark itself is not committed. Where the full file is at hand (`A2C_TRUTHFULQA_CSV`, else
`../shared/data/truthfulqa/TruthfulQA.csv` beside the repository, as CI has it) every test reads it;
in a bare clone the tests that only look at the first questions read the committed slice of its first
`SLICE_QUESTIONS` rows (tests/fixtures/truthfulqa), and a test that needs all 817 questions calls
`require_full()`: skipped there with the variable to set, failed under CI, which must never go green on
the slice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

ENV = "A2C_TRUTHFULQA_CSV"
ROOT = Path(__file__).resolve().parents[1]
BESIDE = ROOT.parent / "shared" / "data" / "truthfulqa" / "TruthfulQA.csv"
SLICE = ROOT / "tests" / "fixtures" / "truthfulqa" / "TruthfulQA-slice.csv"
SLICE_QUESTIONS = 60  # test_calibrate's run takes 60 questions; every other test fewer
DOWNLOAD = "https://raw.githubusercontent.com/sylinrl/TruthfulQA/main/TruthfulQA.csv"


def full_location(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the full CSV is looked for: the variable when set (not empty), else beside the repository.

    Args:
        environ: the environment to read `A2C_TRUTHFULQA_CSV` from.

    Returns:
        The path, whether or not a file is there.
    """
    given = environ.get(ENV, "")
    return Path(given).expanduser() if given else BESIDE


def find_full(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The full CSV if a file is at `full_location`; None in a bare clone.

    Args:
        environ: the environment to read `A2C_TRUTHFULQA_CSV` from.

    Returns:
        The resolved path, or None.
    """
    location = full_location(environ)
    return location.resolve() if location.is_file() else None


def in_ci(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether `CI` says so (`true`, as CI services set it; `1` and `yes` count too).

    Args:
        environ: the environment to read `CI` from.

    Returns:
        True under CI.
    """
    return environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def missing_reason(environ: Mapping[str, str] = os.environ) -> str:
    """The one line a test that needs the full CSV gives where it is missing.

    Args:
        environ: the environment the location was read from.

    Returns:
        What is missing and what to set.
    """
    return (f"needs the full TruthfulQA.csv (817 questions), none at {full_location(environ)}: "
            f"set {ENV} to a copy of {DOWNLOAD}")


FULL = find_full()
TRUTHFULQA = FULL or SLICE  # the CSV a test that needs only the first SLICE_QUESTIONS questions reads


def require_full() -> Path:
    """Call in a test that needs the whole benchmark: its path; otherwise the test is skipped, or failed
    under CI, with `missing_reason`.

    Returns:
        The full CSV's path.
    """
    if FULL is not None:
        return FULL
    if in_ci():
        pytest.fail(missing_reason() + " (CI is set: the full file must be there)", pytrace=False)
    pytest.skip(missing_reason())
