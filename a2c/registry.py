"""Deprecated path (floor plan shim): `a2c.registry` moved to `a2c.common.registry`; it goes in 0.3.0."""

from __future__ import annotations

from a2c.common.registry import lazy_attributes

__getattr__ = lazy_attributes(__name__, {}, moved_to="a2c.common.registry", deprecated=lambda name: (
    f"a2c.registry moved to a2c.common.registry: import {name} from there "
    "(this alias goes in 0.3.0)"))
