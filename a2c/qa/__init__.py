"""The QA task (the paper's pipeline, the default task): a wing of the task-neutral core.

Its entry in the task registry is `a2c.qa.task:TASK`; its public faces are `a2c.choose` (the decoding
wrapper) and `a2c.scoring` (TruthfulQA accuracy).

Nothing is exported here: import each module by its path (`a2c.qa.task`), or the faces above.
"""

from __future__ import annotations

__all__: list[str] = []
