"""Building blocks of every task's report: tables (markdown and CSV), number formats, figures as PNG bytes.

Task-neutral, so the QA and classification reports (and the run viewer) draw tables the same way.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from a2c.common.errors import A2CError
from a2c.common.untrusted import spreadsheet_cell

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class ReportError(A2CError):
    """A folder that is not a finished run (no metrics yet), or a malformed human labels file."""


def fmt(value: float | None) -> str:
    """A metric as tables print it: 3 decimals, `n/a` when undefined."""
    return "n/a" if value is None else f"{value:.3f}"


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]

    def markdown(self) -> str:
        lines = ["| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        # a `|` inside a cell (a label, a CALM symbol) would end the cell
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |" for r in self.rows]
        return "\n".join(lines)

    def csv(self) -> str:
        """The table as CSV; cells hold labels and model names the user chose, so a cell a spreadsheet
        would run as a formula is escaped."""
        out = io.StringIO()
        writer = csv.writer(out)
        for row in (self.header, *self.rows):
            writer.writerow([spreadsheet_cell(cell) for cell in row])
        return out.getvalue()


def png_bytes(fig: Figure) -> bytes:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    return buffer.getvalue()


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# a curve is drawn through at most this many of its points, a scatter from at most this many per group:
# a 100,000-question run has millions of answers, and a figure 800 pixels wide shows no more
CURVE_POINTS = 2001
SCATTER_POINTS = 5000


def thinned(x: np.ndarray, y: np.ndarray, points: int = CURVE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """A curve's points at evenly spaced positions along it, both ends kept (all of them when few)."""
    if len(x) <= points:
        return x, y
    keep = np.unique(np.linspace(0, len(x) - 1, points).round().astype(np.int64))
    return x[keep], y[keep]


def sampled(rows: np.ndarray, points: int = SCATTER_POINTS, *, seed: int = 0) -> np.ndarray:
    """At most `points` of the rows, drawn without replacement by a seeded generator, in their order."""
    if len(rows) <= points:
        return rows
    return np.sort(np.random.default_rng(seed).choice(rows, size=points, replace=False))
