"""The run machinery: the task registry, loading a config for a task, stages and their reuse, the run folder
(files, store, lock), opening a made run, and the runner.

Nothing is exported here: import each module by its path (`a2c.run.pipeline`); `a2c` re-exports its entry.
"""

from __future__ import annotations

__all__: list[str] = []
