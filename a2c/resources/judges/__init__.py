"""The shipped judge presets (`offline.yaml`, `paper.yaml`), read by `a2c.judges.load_preset`.

A folder of data files: it exports no Python names.
"""

from __future__ import annotations

__all__: list[str] = []
