"""The keys a config mapping may hold at a given place, for the did-you-mean of an unknown key.

Pydantic reports a key the model forbids by its location only (`('accuracy', 'similarites')`); which keys
would have been right there is found here by walking the config model down that location: fields of a
model, items of a list, values of a mapping, the branch of a union that pydantic names in the location
(a tag such as `OpenAIConfig`, or a member's type name). Only suggestions hang on it, so a location it
cannot follow gives no suggestion rather than an error.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Tag

_SEQUENCES = (list, tuple, set, frozenset, Sequence)


def _unwrapped(annotation: Any) -> Iterator[Any]:
    """`annotation` with `Annotated` and unions opened: the types a value there may have."""
    origin = get_origin(annotation)
    if origin is Annotated:
        yield from _unwrapped(get_args(annotation)[0])
    elif origin is Union or origin is types.UnionType:
        for member in get_args(annotation):
            yield from _unwrapped(member)
    else:
        yield annotation


def _branch_names(member: Any) -> set[str]:
    """The names pydantic may put into a location for one member of a union: its tag and its type name."""
    names = {getattr(t, "__name__", str(t)) for t in _unwrapped(member)}
    if get_origin(member) is Annotated:
        names |= {meta.tag for meta in get_args(member)[1:] if isinstance(meta, Tag)}
    return names


def _step(annotation: Any, part: str | int) -> list[Any] | None:
    """The annotations one location part leads to from `annotation`; None when the part does not apply."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _step(get_args(annotation)[0], part)
    if origin is Union or origin is types.UnionType:
        members = get_args(annotation)
        named = [m for m in members if isinstance(part, str) and part in _branch_names(m)]
        if named:
            return named
        reached = [r for m in members for r in (_step(m, part) or [])]
        return reached or None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(part) if isinstance(part, str) else None
        return None if field is None else [field.annotation]
    if origin in _SEQUENCES and isinstance(part, int):
        items = [a for a in get_args(annotation) if a is not Ellipsis]
        return items[:1] if origin is not tuple else ([items[part]] if part < len(items) else items[-1:])
    if origin in (dict, Mapping):
        key_value = get_args(annotation)
        return [key_value[1]] if len(key_value) == 2 else None
    return None


def keys_at(model: type[BaseModel], location: Sequence[str | int]) -> list[str]:
    """The keys a mapping at `location` (a pydantic error's `loc` without its last part, the bad key) may
    hold, sorted; empty when the location leads to no model.

    Args:
        model: the config model the whole file is validated by.
        location: the path down to the mapping that holds the bad key, union branch names included.

    Returns:
        The field names (and aliases) of every model the location may lead to.
    """
    reached: list[Any] = [model]
    for part in location:
        stepped = [r for a in reached for r in (_step(a, part) or [])]
        # a part nothing here takes is a branch name of a kind not followed (a validator's): stay put
        reached = stepped or reached
    keys: set[str] = set()
    for annotation in reached:
        for kind in _unwrapped(annotation):
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                for name, field in kind.model_fields.items():
                    keys.add(field.alias or name)
    return sorted(keys)


def did_you_mean(model: type[BaseModel], location: Sequence[str | int]) -> str:
    """` (did you mean 'KEY'?)` with the valid keys closest to the last part of `location`, or "".

    Args:
        model: the config model the whole file is validated by.
        location: a pydantic error's `loc`, ending with the unknown key.

    Returns:
        The hint to append to "unknown key", empty when no valid key is close.
    """
    if not location:
        return ""
    close = difflib.get_close_matches(str(location[-1]), keys_at(model, location[:-1]), n=3)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
