"""One spelling of "a named component with its options": judges, accuracy similarities, paraphrasing
techniques, selection methods — in a config, a preset file or on the command line.

A spec is `{name: pp, threshold: 0.8}` (YAML), a bare `pp` (no options) or `pp:threshold=0.8` (the CLI's
`-s`/`--judge` form). The name is checked against the kind's registry (did-you-mean on a typo) and the options
by the component's own `Options` model, so a bad option fails when the config loads, keyed by its path
(`judges.0.threshold`), never after the model stages.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, ClassVar, Self, cast

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from a2c.common.errors import A2CError
from a2c.common.registry import Registry, UnknownNameError, resolve


class SpecError(A2CError, ValueError):
    """A component spec that cannot be read: a bad `name:k=v` string, an unknown name or option."""


def unknown_options(model: type[BaseModel], options: Mapping[str, Any], kind: str = "component"
                    ) -> ValidationError | None:
    """Options a model does not take, as one pydantic error per key (each with the closest known key), so
    a config reports `file:line: judges.0.treshold: unknown option (did you mean 'threshold'?) ...`."""
    known = sorted(model.model_fields)
    errors = []
    for key in options:
        if key in model.model_fields:
            continue
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        error = PydanticCustomError("unknown_option", "unknown option{hint}; this {kind} takes {known}",
                                    {"hint": hint, "kind": kind, "known": known or "none"})
        errors.append(InitErrorDetails(type=error, loc=(key,), input=options[key]))
    return ValidationError.from_exception_data(model.__name__, errors) if errors else None


def validate_options(model: type[BaseModel], options: Mapping[str, Any], kind: str = "component"
                     ) -> BaseModel:
    """Options checked by a component's model: unknown keys first, then every value (pydantic errors)."""
    unknown = unknown_options(model, options, kind)
    if unknown is not None:
        raise unknown
    return model.model_validate(dict(options))


def one_line(kind: str, name: str, exc: ValidationError) -> str:
    """A component's option errors as the one line `build_*` callers and the CLI show."""
    problems = []
    for error in exc.errors(include_url=False):
        key = ".".join(str(p) for p in error["loc"] if not str(p)[:1].isupper())  # drop union-branch tags
        got = "" if error["type"] == "unknown_option" else f", got {error['input']!r}"
        problems.append(f"{key}: {error['msg']}{got}")
    return f"{kind} {name!r}: {'; '.join(problems)}"


class ComponentSpec(BaseModel):
    """A component by registry name with its options inline. Subclasses name the registry and how to find a
    component's `Options` model; `options` gives the validated options that were set (typed), leaving the
    unset ones to the component's defaults."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    kind: ClassVar[str]
    registry_at: ClassVar[str]  # "module:attr" of the kind's registry, imported on first use
    options_attr: ClassVar[str] = "options"  # the registry entry's attribute holding its `Options` model
    # a plain spec serialises as its bare name (`rouge1`), so stage keys of a plain list stay as they were
    bare_when_plain: ClassVar[bool] = False
    _options: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def registry(cls) -> Registry[Any]:
        registry: Registry[Any] = resolve(cls.registry_at, Registry, f"{cls.kind} registry")
        return registry

    @classmethod
    def options_model(cls, name: str) -> type[BaseModel]:
        model: type[BaseModel] = getattr(cls.registry().get(name), cls.options_attr)
        return model

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        try:
            cls.registry().get(name)
        except UnknownNameError as exc:
            raise ValueError(str(exc)) from None
        return name

    @model_validator(mode="after")
    def _valid_options(self) -> Self:
        # a ValidationError keyed by option: pydantic nests it under this entry (judges.0.threshold)
        checked = validate_options(self.options_model(self.name), self.model_extra or {}, self.kind)
        self._options = checked.model_dump(exclude_unset=True)
        return self

    @property
    def options(self) -> dict[str, Any]:
        """The options given, typed (a copy)."""
        return dict(self._options)

    @model_serializer(mode="wrap")
    def _bare_name(self, handler: SerializerFunctionWrapHandler) -> Any:
        return self.name if self.bare_when_plain and not self.model_extra else handler(self)

    @classmethod
    def of(cls, name: str, **options: Any) -> Self:
        """A spec from Python, with its problems as one `SpecError` line."""
        try:
            return cls.model_validate({"name": name, **options})
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            if first["loc"] == ("name",):
                raise SpecError(str(first["msg"]).removeprefix("Value error, ")) from None
            raise SpecError(one_line(cls.kind, name, _options_only(exc))) from None

    @classmethod
    def default(cls, name: str) -> Self:
        """A config default (a built-in name, no options), built unchecked: pydantic fills defaults even
        when another key failed, and checking the name would import the component's module (numpy, the
        model code) before a typo's one-line error. Equal to `of(name)` (a test holds them together)."""
        return cast(Self, cls.model_construct(name=name))

    @classmethod
    def parse(cls, text: str) -> Self:
        """`name` or `name:key=value,key=value` (the command line's form); values are YAML scalars."""
        name, _, rest = text.partition(":")
        options: dict[str, Any] = {}
        for item in filter(None, rest.split(",")):
            key, equals, value = item.partition("=")
            if not equals or not key.strip():
                raise SpecError(f"{text!r}: options are key=value pairs separated by commas")
            try:
                options[key.strip()] = yaml.safe_load(value)
            except (yaml.YAMLError, ValueError):  # ValueError: a scalar YAML cannot convert, e.g. 2001-13-45
                raise SpecError(f"{text!r}: {value!r} is not a YAML value (true, 32, a path)") from None
        return cls.of(name.strip(), **options)


def _options_only(exc: ValidationError) -> ValidationError:
    """The errors of a spec's options, with their keys relative to the options."""
    return ValidationError.from_exception_data(exc.title, [
        InitErrorDetails(type=PydanticCustomError(e["type"], str(e["msg"])), loc=tuple(e["loc"]),
                         input=e["input"]) for e in exc.errors(include_url=False)])


def expand(specs: Any) -> Any:
    """`[rouge1, {name: bleu}]` → `[{name: rouge1}, {name: bleu}]`: a bare name is a spec with no options."""
    if isinstance(specs, list):
        return [{"name": s} if isinstance(s, str) else s for s in specs]
    return specs
