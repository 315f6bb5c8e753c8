"""The request cache: real SQLite files, real concurrent processes, a real SIGKILL mid-write."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.system.cache import PAGE_CACHE_KIB, Cache, CacheError, NoCache, make_key, open_cache

BATCH = 50


def _writer(path: str, worker: int, batches: int) -> None:
    cache = Cache(path)
    for b in range(batches):
        cache.put_many({f"w{worker}-b{b}-i{i}": {"worker": worker, "i": i} for i in range(BATCH)})
    cache.close()


def _endless_writer(path: str) -> None:
    cache = Cache(path)
    b = 0
    while True:
        cache.put_many({f"b{b}-i{i}": {"text": "x" * 200, "i": i} for i in range(BATCH)})
        b += 1


def test_roundtrip_and_namespaces(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    cache.put_many({"a": {"text": "hi", "n": [1, 2]}, "b": 3})
    cache.put("a", "judge-score", namespace="judge")
    assert cache.get_many(["a", "b", "missing"]) == {"a": {"text": "hi", "n": [1, 2]}, "b": 3}
    assert cache.get("a", namespace="judge") == "judge-score"
    assert cache.get("b", namespace="judge") is None
    assert cache.count("generation") == 2 and cache.count() == 3
    cache.close()
    # persisted: a fresh handle sees the same values
    assert Cache(tmp_path / "c.sqlite").get("b") == 3


def test_get_many_beyond_sqlite_parameter_limit(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    items = {str(i): i for i in range(2500)}
    cache.put_many(items)
    assert cache.get_many(list(items)) == items


def test_every_connection_keeps_a_large_page_cache_in_wal_mode(tmp_path):
    # a 100,000-question run's cache re-reads B-tree pages on most inserts with SQLite's 2 MB default
    # (benchmarks/bench_cache_growth.py); a reopened file gets the same settings
    cache = Cache(tmp_path / "c.sqlite")
    cache.put("a", 1)
    conn = cache._connect()
    assert PAGE_CACHE_KIB >= 32768
    assert conn.execute("PRAGMA cache_size").fetchone()[0] == -PAGE_CACHE_KIB
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cache.close()
    again = Cache(tmp_path / "c.sqlite")
    assert again._connect().execute("PRAGMA cache_size").fetchone()[0] == -PAGE_CACHE_KIB
    assert again.get("a") == 1


def test_key_is_stable_and_separates_every_part():
    base = dict(backend="transformers", model="m", prompt="Q?", temperature=0.7, top_p=0.9, seed=3, sample=0)
    assert make_key(**base) == make_key(**dict(reversed(list(base.items()))))
    assert make_key(**base) != make_key(**{**base, "sample": 1})  # n samples are n entries
    assert make_key(**base) != make_key(**{**base, "seed": 4})
    assert make_key(**base) != make_key(**{**base, "temperature": 0.8})
    assert make_key(a=1) != make_key(a=1.0)
    assert make_key(a=(1, 2)) == make_key(a=[1, 2])
    with pytest.raises(TypeError, match="set"):
        make_key(a={1, 2})


def test_concurrent_writers_from_several_processes(tmp_path):
    path = str(tmp_path / "c.sqlite")
    Cache(path).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 8)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = Cache(path)
    assert cache.count() == 4 * 8 * BATCH
    assert cache.get("w3-b7-i49") == {"worker": 3, "i": 49}


def test_killed_writer_loses_only_its_inflight_batch(tmp_path):
    path = str(tmp_path / "c.sqlite")
    ctx = mp.get_context("spawn")
    proc = ctx.Process(target=_endless_writer, args=(path,))
    proc.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if os.path.exists(path) and Cache(path).count() >= 5 * BATCH:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(10)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    cache = Cache(path)
    stored = cache.count()
    assert stored >= 5 * BATCH
    assert stored % BATCH == 0  # every committed batch is whole; the killed one left nothing behind
    batches = stored // BATCH
    keys = [f"b{b}-i{i}" for b in range(batches) for i in range(BATCH)]
    assert len(cache.get_many(keys)) == stored


def test_interrupted_write_is_rolled_back_and_the_next_one_succeeds(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    conn = cache._connect()

    class InterruptedMidWrite:
        """The real connection, with Ctrl-C landing between BEGIN and COMMIT."""

        in_transaction = property(lambda self: conn.in_transaction)

        def execute(self, *args):
            return conn.execute(*args)

        def executemany(self, *args):
            raise KeyboardInterrupt

    cache._conn = InterruptedMidWrite()  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        cache.put_many({"a": 1})
    cache._conn = conn
    cache.put_many({"b": 2})  # an open transaction would make this "cannot start a transaction within ..."
    assert cache.get_many(["a", "b"]) == {"b": 2}


def test_bad_path_is_a_clear_error(tmp_path):
    not_db = tmp_path / "notes.sqlite"
    not_db.write_text("this is not a database " * 100)
    with pytest.raises(CacheError, match=r"notes\.sqlite"):
        Cache(not_db)
    with pytest.raises(CacheError, match="cannot open cache"):
        Cache(tmp_path)  # a directory


def test_open_cache_none_disables_and_paths_are_shared(tmp_path):
    off = open_cache(None)
    assert isinstance(off, NoCache)
    off.put("a", 1)
    assert off.get_many(["a"]) == {}
    assert open_cache(tmp_path / "x.sqlite") is open_cache(str(tmp_path / "x.sqlite"))


PARTS = st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k != "sample"),
                        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                                  st.text(max_size=20), st.lists(st.integers(), max_size=4)),
                        max_size=6)


@given(PARTS, st.integers(0, 50), st.integers(0, 50))
def test_key_order_free_and_sample_sensitive(parts, i, j):
    reordered = dict(reversed(list(parts.items())))
    assert make_key(**parts, sample=i) == make_key(**reordered, sample=i)
    assert (make_key(**parts, sample=i) == make_key(**parts, sample=j)) == (i == j)


def test_numpy_scalars_key_like_python_numbers():
    assert make_key(seed=np.int64(3), t=np.float64(0.5)) == make_key(seed=3, t=0.5)
    assert make_key(flag=True) != make_key(flag=1)
