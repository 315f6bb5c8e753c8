"""Building blocks of what people read: report tables, number formats and figures, and what a task hands the
run viewer.

Nothing is exported here: import each module by its path (`a2c.display.reporting`).
"""

from __future__ import annotations

__all__: list[str] = []
