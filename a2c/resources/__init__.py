"""Files shipped inside the package: prompt templates and judge presets.

Both are addressed the same way: a bare name picks a shipped file, a `.yaml` path picks any file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["shipped_or_path"]


def shipped_or_path(package: str, name_or_path: str) -> tuple[Path, str | None]:
    """The file to read and its shipped name (None for a user's path).

    Raises FileNotFoundError listing the shipped names when a bare name matches none of them.
    """
    candidate = Path(name_or_path)
    if candidate.suffix in {".yaml", ".yml"}:
        return candidate, None
    shipped = Path(str(resources.files(package).joinpath(f"{name_or_path}.yaml")))
    if not shipped.is_file():
        available = sorted(p.stem for p in shipped.parent.glob("*.yaml"))
        raise FileNotFoundError(f"{name_or_path!r}; available: {available}")
    return shipped, name_or_path
