"""Keeping the objects a stage starts with out of the cyclic garbage collector's way.

Why: a full collection walks every tracked container, and a run holds containers whose size grows with
the number of questions (the dataset's records, the question list, indexes by id) for its whole length.
The stages allocate steadily, so full collections come at a steady rate, and each walked all of that: at
10,000 questions the answers stage spent 2.0 s of its 31 s in full collections, at 30,000 four times as
much for three times the work. What a stage starts with lives on through it, so it is frozen (moved to
the collector's permanent generation) for the stage and thawed after it, when its garbage can be found
again (`benchmarks/bench_scale.py`).

What a stage makes while it runs is still collected, less often: its rows, dicts and arrays die by
reference count, not by the collector. The metrics stage of a 10,000-question run made 5,633 collections
(0.7 s young, 2.2 s full) that freed 30 objects in all, so a stage collects its young objects every
`YOUNG_COLLECTION` net allocations instead of Python's 700; the cyclic garbage that waits is bounded by that.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_COLLECTION = 50_000  # net container allocations between young collections inside a stage


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Collect once, then leave every object alive now out of the collections until the block ends, and
    collect what the block makes every `YOUNG_COLLECTION` allocations; both undone when it ends."""
    gc.collect()
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(max(YOUNG_COLLECTION, thresholds[0]), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
