"""Building blocks of every task's report: tables (markdown and CSV), number formats, figures as PNG bytes.

Task-neutral, so the QA and classification reports (and the run viewer) draw tables the same way.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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


