"""How the request cache's cost per stored entry grows as the cache grows, with a2c's page cache and
SQLite's default one.

Run: `.venv/bin/python benchmarks/bench_cache_growth.py [--entries 1400000] [--batch 1792]` from the
repository root. A 10,000-question run of the paper's protocol leaves about 470,000 entries in its cache
(130 MB), a 100,000-question one ten times that; keys are sha256 digests (as `make_key` makes them), so every
insert lands on a random leaf of the B-tree. Printed per tenth of the entries: process CPU (user and
system) of storing them, for `Cache` as a2c opens it (`PAGE_CACHE_KIB`) and with SQLite's default 2 MB
page cache; then the last tenth's cost over the first tenth's (1.0 = linear) and the totals' ratio.
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from a2c.system.cache import Cache

VALUE = {"text": "An answer of about the length the stand-in model gives. " * 3, "finish": "stop",
         "tokens": 21}


def _cpu() -> tuple[float, float]:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime, u.ru_stime


def tenths(entries: int, batch: int, page_cache_kib: int | None, folder: Path) -> list[tuple[float, float]]:
    """(user, system) seconds of storing each tenth of `entries`, `batch` per transaction."""
    cache = Cache(folder / "cache.sqlite")
    if page_cache_kib is not None:
        cache._connect().execute(f"PRAGMA cache_size=-{page_cache_kib}")
    out, stored, block = [], 0, entries // 10
    for _ in range(10):
        user, system = _cpu()
        for _ in range(block // batch):
            keys = (hashlib.sha256(str(stored + i).encode()).hexdigest() for i in range(batch))
            cache.put_many(dict.fromkeys(keys, VALUE))
            stored += batch
        after = _cpu()
        out.append((after[0] - user, after[1] - system))
    cache.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_400_000,
                        help="entries stored in all (default 1.4 M: a 30,000-question run)")
    parser.add_argument("--tmp", type=Path, help="where the cache files go (default: the system's temp)")
    parser.add_argument("--batch", type=int, default=1792, help="entries per put_many (default 1792)")
    args = parser.parse_args()
    results = {}
    for label, kib in (("a2c (PAGE_CACHE_KIB)", None), ("SQLite default (2 MB)", 2000)):
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            results[label] = tenths(args.entries, args.batch, kib, Path(tmp))
    print(f"{'entries stored':>16}" + "".join(f"{label:>26}" for label in results))
    block = args.entries // 10
    for k in range(10):
        cells = [f"{u:.1f} + {s:.1f} s" for u, s in (r[k] for r in results.values())]
        print(f"{(k + 1) * block:>16,}" + "".join(f"{c:>26}" for c in cells))
    for label, r in results.items():
        first, last = sum(r[0]), sum(r[-1])
        print(f"{label}: all {sum(map(sum, r)):.1f} s CPU, last tenth / first tenth {last / first:.2f}x")
    ours, default = (sum(map(sum, r)) for r in results.values())
    print(f"a2c's page cache / SQLite's default, all entries: {ours / default:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
