"""Keeping the objects a stage starts with out of the cyclic garbage collector's way.

Why: a full collection walks every tracked container, and a run holds containers whose size grows with
the number of questions (the dataset's records, the question list, indexes by id) for its whole length.
The stages allocate steadily, so full collections come at a steady rate, and each walked all of that: at
10,000 questions the answers stage spent 2.0 s of its 31 s in full collections, at 30,000 four times as
much for three times the work. What a stage starts with lives on through it, so it is frozen (moved to
the collector's permanent generation) for the stage and thawed after it, when its garbage can be found
again (`benchmarks/bench_scale.py`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Collect once, then leave every object alive now out of the collections until the block ends."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
