"""The QA task (the paper's pipeline, the default task): a wing of the task-neutral core.

Its entry in the task registry is `a2c.qa.task:TASK`; its public faces are `a2c.choose` (the decoding
wrapper) and `a2c.scoring` (TruthfulQA accuracy).
"""
