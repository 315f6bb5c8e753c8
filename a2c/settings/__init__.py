"""What a run's config is: the settings every task's config shares (`RunConfig`), how its problems are
reported, where paths in it are read from, and where a run's folder may be.

Nothing is exported here: import each module by its path (`a2c.settings.config`).
"""

from __future__ import annotations

__all__: list[str] = []
