"""The machine a2c runs on: the request cache on disk (SQLite), faults of the machine (disk full, read-only),
devices, the model hub, stopping on signals and the watchdog of child processes.

Nothing is exported here: import each module by its path (`a2c.system.cache`).
"""

from __future__ import annotations

__all__: list[str] = []
