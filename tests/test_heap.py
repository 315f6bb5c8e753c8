"""The heap a stage starts with is frozen for the stage (`a2c.system.heap`): left out of full collections,
so their cost does not grow with what a run holds; thawed after, so its garbage is found again."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

import a2c.run.stage
from a2c.llm import build_generator
from a2c.qa.stages import QAContext
from a2c.run.pipeline import run_experiment
from a2c.run.runfiles import RunFile
from a2c.run.stage import Generators, Stage, run_stages
from a2c.run.store import MemoryStore
from a2c.system.heap import YOUNG_COLLECTION, frozen_heap
from tests.test_stages import EVERY_STAGE, _config


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


def test_a_cycle_made_before_the_block_outlives_collections_in_it_and_is_freed_after():
    node = _Node()
    alive = weakref.ref(node)
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        del node
        gc.collect()
        assert alive() is not None  # frozen: no collection looks at it
        inside = _Node()
        gone = weakref.ref(inside)
        del inside
        gc.collect()
        assert gone() is None  # what the block makes is collected as ever
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert alive() is None


def test_the_heap_is_thawed_when_the_block_fails():
    thresholds = gc.get_threshold()
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("a stage failed")
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == thresholds


def test_young_objects_are_collected_less_often_in_the_block_and_as_before_after_it():
    thresholds = gc.get_threshold()
    with frozen_heap():
        assert gc.get_threshold() == (YOUNG_COLLECTION, *thresholds[1:])
        before = gc.get_stats()[0]["collections"]
        kept = [[] for _ in range(YOUNG_COLLECTION // 2)]  # tracked containers, alive: no young collection
        assert gc.get_stats()[0]["collections"] == before
        kept += [[] for _ in range(YOUNG_COLLECTION)]
        assert gc.get_stats()[0]["collections"] > before
    assert gc.get_threshold() == thresholds
    del kept


def test_a_higher_threshold_than_ours_is_kept():
    thresholds = gc.get_threshold()
    gc.set_threshold(2 * YOUNG_COLLECTION, *thresholds[1:])
    try:
        with frozen_heap():
            assert gc.get_threshold()[0] == 2 * YOUNG_COLLECTION
        assert gc.get_threshold()[0] == 2 * YOUNG_COLLECTION
    finally:
        gc.set_threshold(*thresholds)


def test_a_run_freezes_the_heap_for_each_stage(tmp_path, monkeypatch):
    seen: dict[str, int] = {}
    run_stage = a2c.run.stage.run_stage

    def counting(ctx: Any, stage: Any, decision: Any) -> Any:
        seen[stage.name] = gc.get_freeze_count()
        return run_stage(ctx, stage, decision)

    monkeypatch.setattr(a2c.run.stage, "run_stage", counting)
    run_experiment(_config(tmp_path), progress=False)
    assert list(seen) == EVERY_STAGE
    assert all(count > 0 for count in seen.values()), seen
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("freeze", [False, True])
def test_run_stages_freezes_only_when_asked(tmp_path, freeze):
    """The A2C wrapper runs its stages per call, in a process that may serve requests: no full collection
    and no freezing there."""
    config = _config(tmp_path)
    generator = build_generator(config.generator)
    seen = []

    def look(ctx: QAContext, stats: Any) -> None:
        seen.append(gc.get_freeze_count())
        ctx.store.write_text("out.txt", "done")

    stage = Stage("look", reads=(), writes=(RunFile("out.txt"),), config_slice=lambda c: {}, run=look)
    ctx = QAContext(config, MemoryStore(), [], generators=Generators(generator, generator))
    run_stages(ctx, [stage], **({"around": frozen_heap} if freeze else {}))
    assert (seen[0] > 0) is freeze
    assert gc.get_freeze_count() == 0
