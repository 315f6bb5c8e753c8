"""Persistent key → JSON store in SQLite, shared by generation backends and judges.

Why SQLite: one file, atomic commits, and WAL mode lets several processes (e.g. two `a2c run`s over the
same cache, or a pool of workers) read while one writes. Every `put_many` is its own transaction, so a
crash loses at most the entries that had not been handed to `put_many` yet: callers store each finished
batch as soon as it is done. Keys are sha256 digests of canonical JSON (`make_key`), so they do not depend
on dict order or on how floats were spelled in a config file. Namespaces ("generation", "judge", ...)
keep unrelated users of the same file apart.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from a2c.common.errors import A2CError
from a2c.system.faults import environment_fault

DEFAULT_CACHE_PATH = Path(".a2c-cache") / "cache.sqlite"
_SQLITE_MAX_VARIABLES = 900  # stay under SQLite's default host-parameter limit in IN (...) lookups
_BUSY_TIMEOUT_S = 60.0
# SQLite's page cache per connection, in KiB (its default is 2 MB). Keys are digests, so every lookup and
# insert lands on a random leaf: a 10,000-question run of the paper's protocol leaves ~470,000 entries
# (130 MB), and with the default most inserts re-read B-tree pages from the OS (system time); 64 MB keeps
# the interior pages and more of the leaves (benchmarks/bench_cache_growth.py)
PAGE_CACHE_KIB = 65536


class CacheError(A2CError):
    """The cache file cannot be opened or written (bad path, not a SQLite file, disk full)."""


def _recover(path: Path) -> str:
    return (f"delete {path} (it holds only cached model answers and judge scores: a rerun asks for them "
            "again), or run with --no-cache")


_DAMAGED = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}
_UNWRITABLE = "make the cache folder writable, or set the generator's `cache:` to a writable path"
# SQLite's (primary) error names → what to do
_SQLITE_HINTS: dict[str, str] = {
    "SQLITE_FULL": "free some space and rerun (finished model calls are kept)",
    "SQLITE_READONLY": _UNWRITABLE, "SQLITE_CANTOPEN": _UNWRITABLE, "SQLITE_PERM": _UNWRITABLE,
}


def cache_error(path: Path, action: str, exc: sqlite3.Error | OSError) -> CacheError:
    """`cannot <action> cache PATH: <problem>` with what to do about it, where that is known: a damaged
    file is deleted, a full disk freed, a locked-down folder opened or the cache put elsewhere."""
    if isinstance(exc, OSError):
        fault = environment_fault(exc, path)
        hint = fault.hint if fault is not None else None
    else:  # SQLITE_READONLY_DBMOVED → SQLITE_READONLY
        code = "_".join(getattr(exc, "sqlite_errorname", "").split("_")[:2])
        hint = _recover(path) if code in _DAMAGED else _SQLITE_HINTS.get(code)
    return CacheError(f"cannot {action} cache {path}: {exc}", hint=hint)


def damaged_cache(path: Path | None, detail: str) -> CacheError:
    """A cache entry that is not what a2c stored: the file was damaged (or written by something else)."""
    return CacheError(f"{path}: {detail}: the cache file is damaged", hint=_recover(Path(str(path))))


def _canonical(value: Any) -> Any:
    """JSON-ready form with a stable spelling: tuples as lists, dataclasses as dicts, floats as repr."""
    kind = type(value)  # the exact built-in types first: every request's key is built of them
    if kind is str or value is None or kind is bool or kind is int:
        return value
    if kind is list or kind is tuple:
        return [_canonical(v) for v in value]
    if kind is dict:
        return {str(k): _canonical(v) for k, v in value.items()}
    if kind is float:
        return {"__float__": repr(value)}
    if hasattr(value, "__dataclass_fields__"):
        return {k: _canonical(getattr(value, k)) for k in value.__dataclass_fields__}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):  # numpy integers too
        return int(value)
    if isinstance(value, numbers.Real):
        return {"__float__": repr(float(value))}  # 0.7 and 0.70 agree; 1 (int) and 1.0 (float) do not
    raise TypeError(f"cannot build a cache key from {type(value).__name__}: {value!r}")


def make_key(**parts: Any) -> str:
    """Stable sha256 hex digest of the keyword parts (order-independent, canonical JSON)."""
    text = json.dumps(_canonical(parts), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Cache:
    """A SQLite key → JSON-value store; safe to share across threads and processes."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_CACHE_PATH) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._connect()  # fail early with a clear message on a bad path

    def _connect(self) -> sqlite3.Connection:
        # a connection must not cross a fork: reopen in a child process
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False,
                                   isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS entries (namespace TEXT NOT NULL, key TEXT NOT NULL, "
                "value TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (namespace, key)) WITHOUT ROWID"
            )
        except (sqlite3.Error, OSError) as exc:
            raise cache_error(self.path, "open", exc) from None
        self._conn, self._pid = conn, os.getpid()
        return conn

    def get_many(self, keys: Iterable[str], namespace: str = "generation") -> dict[str, Any]:
        """The stored values of those keys that are present (missing keys are simply absent)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Any] = {}
        with self._lock:
            conn = self._connect()
            for start in range(0, len(wanted), _SQLITE_MAX_VARIABLES):
                chunk = wanted[start:start + _SQLITE_MAX_VARIABLES]
                marks = ",".join("?" * len(chunk))
                try:
                    rows = conn.execute(
                        f"SELECT key, value FROM entries WHERE namespace = ? AND key IN ({marks})",
                        (namespace, *chunk),
                    ).fetchall()
                except sqlite3.Error as exc:
                    raise cache_error(self.path, "read", exc) from None
                for key, value in rows:
                    try:
                        found[key] = json.loads(value)
                    except (ValueError, RecursionError):
                        raise damaged_cache(self.path, f"the {namespace} entry {key[:12]}… is not JSON"
                                            ) from None
        return found

    def get(self, key: str, namespace: str = "generation") -> Any | None:
        return self.get_many([key], namespace).get(key)

    def put_many(self, items: Mapping[str, Any], namespace: str = "generation") -> None:
        """Store all items in one transaction: after a crash either all of them are there or none."""
        if not items:
            return
        now = time.time()
        # no spaces after separators: a generation entry with per-token log-probabilities is ~7% smaller
        rows = [(namespace, k, json.dumps(v, ensure_ascii=False, separators=(",", ":")), now)
                for k, v in items.items()]
        with self._lock:
            conn = self._connect()
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)", rows)
                conn.execute("COMMIT")
            except BaseException as exc:
                # a KeyboardInterrupt between BEGIN and COMMIT too: left open, the transaction would make
                # every later write of this connection fail
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise cache_error(self.path, "write", exc) from None
                raise

    def put(self, key: str, value: Any, namespace: str = "generation") -> None:
        self.put_many({key: value}, namespace)

    def count(self, namespace: str | None = None) -> int:
        with self._lock:
            conn = self._connect()
            if namespace is None:
                total: int = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
                return total
            row = conn.execute("SELECT COUNT(*) FROM entries WHERE namespace = ?", (namespace,)).fetchone()
            count: int = row[0]
            return count

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NoCache:
    """Stands in for `Cache` when caching is off (`--no-cache`, `cache: null`): stores nothing."""

    path = None

    def get_many(self, keys: Iterable[str], namespace: str = "generation") -> dict[str, Any]:
        return {}

    def get(self, key: str, namespace: str = "generation") -> Any | None:
        return None

    def put_many(self, items: Mapping[str, Any], namespace: str = "generation") -> None:
        return None

    def put(self, key: str, value: Any, namespace: str = "generation") -> None:
        return None

    def count(self, namespace: str | None = None) -> int:
        return 0

    def close(self) -> None:
        return None


_OPEN: dict[Path, Cache] = {}
_OPEN_LOCK = threading.Lock()


def open_cache(path: str | os.PathLike[str] | None = DEFAULT_CACHE_PATH) -> Cache | NoCache:
    """The process-wide cache for a path (one connection per file), or `NoCache()` for `None`."""
    if path is None:
        return NoCache()
    resolved = Path(path).expanduser().resolve()
    with _OPEN_LOCK:
        if resolved not in _OPEN:
            _OPEN[resolved] = Cache(resolved)
        return _OPEN[resolved]
