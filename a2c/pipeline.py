"""Deprecated path (floor plan shim): `a2c.pipeline` moved to `a2c.run.pipeline`; this alias goes in the
next release."""

from __future__ import annotations

import importlib
import warnings
from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):  # the import system's probes (`__path__`), not a user's name
        raise AttributeError(name)
    warnings.warn(f"a2c.pipeline moved to a2c.run.pipeline: import {name} from there "
                  "(this alias goes in the next release)", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module("a2c.run.pipeline"), name)
