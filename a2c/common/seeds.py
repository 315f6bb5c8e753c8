"""Per-item sampling seeds that are stable across processes, so the request cache recognises a rerun.

Python's `hash()` is salted per process; a digest of the parts' `repr` is not. The seed follows the item
(question text, technique, slot), never its position in a batch, so chunk sizes change no sample.
"""

from __future__ import annotations

import hashlib


def stable_seed(*parts: object, bits: int = 32) -> int:
    """A `bits`-bit seed from the parts (31 bits where a backend wants a non-negative int32)."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:4], "big") & ((1 << bits) - 1)
