"""What one request's `a2c` object may change, and how far: an allow-list within the operator's bounds.

A request comes from whoever reaches the port, so it may vary how its own question is answered (seed,
techniques, temperatures, samples, reply budgets, the A2C settings) and pick judges by name among those the
server loaded at start-up, and nothing else: never what the server talks to or reads (a generator, backend,
base URL, key or key variable, cache, template, model path, device). A judge spec carrying any of those
once made the server send its upstream key to a host the request named, and open or load files it named.

The allowed keys are the run config's own sections made strict (a JSON `true` is not a number) and closed
(any other key is a 400 naming it and what may be set there). The bounds (`server.max_tokens`,
`max_samples`, `max_calls_per_request`) are checked on the merged settings, so the server's own defaults
are held to them at start-up too.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from a2c.common.components import expand
from a2c.judges import JUDGES
from a2c.qa.config import (
    RENAMED_SECTIONS,
    A2CConfig,
    ExperimentConfig,
    TechniqueConfig,
    VariationConfig,
    renamed_keys,
)
from a2c.serve.config import SETTING_KEYS, ServerOptions, SettingsError, answer_settings, describe

_CLOSED = ConfigDict(extra="forbid", strict=True)


def _optional_fields(model: type[BaseModel], keys: Sequence[str]) -> type[BaseModel]:
    """`model`'s `keys`, each optional and strictly typed, and no other key (values are checked by `model`
    itself once merged)."""
    fields: dict[str, Any] = {name: (Optional[model.model_fields[name].annotation], None)  # noqa: UP045
                              for name in keys}
    return create_model(f"PerRequest{model.__name__}", __config__=_CLOSED, **fields)


class JudgeName(BaseModel):
    """A judge as a request may give it: its name only; its options are the server's."""

    model_config = _CLOSED

    name: str


VARIATION_KEYS = tuple(VariationConfig.model_fields)
A2C_KEYS = tuple(k for k in A2CConfig.model_fields if k != "enabled")  # a served answer is always chosen
_SECTIONS: dict[str, Any] = {  # the `a2c` object's keys (SETTING_KEYS), each optional
    "seed": (int | None, None),
    "variation": (_optional_fields(VariationConfig, VARIATION_KEYS) | None, None),
    "ask_to_choose": (_optional_fields(A2CConfig, A2C_KEYS) | None, None),
    "judges": (list[JudgeName] | None, None),
    "entropy_judge": (str | None, None),
}
RequestSettings: type[BaseModel] = create_model("RequestSettings", __config__=_CLOSED, **_SECTIONS)

# where a refused key sits → what may be set there instead
_MAY_SET: dict[tuple[str, ...], str] = {
    (): ", ".join(SETTING_KEYS),
    ("variation",): ", ".join(VARIATION_KEYS),
    ("ask_to_choose",): ", ".join(A2C_KEYS),
    ("variation", "techniques"): f"a built-in name, or {', '.join(TechniqueConfig.model_fields)}",
}
_MERGED = ("variation", "ask_to_choose")  # sections a request sets key by key on top of the server's

# bounded settings → the server option that bounds them
BOUNDS: dict[tuple[str, str], str] = {
    ("variation", "samples"): "max_samples",
    ("variation", "paraphrase_max_tokens"): "max_tokens",
    ("variation", "long_max_tokens"): "max_tokens",
    ("variation", "short_max_tokens"): "max_tokens",
    ("ask_to_choose", "max_tokens"): "max_tokens",
}


def _refused_key(error: Any, where: str, judges: Sequence[str]) -> SettingsError:
    loc = [str(p) for p in error["loc"] if isinstance(p, int) or (p[:1].islower() and p != "str")]
    key = ".".join((where, *loc))
    shape = tuple(p for p in loc[:-1] if not p.isdigit())  # union branches and list indices left out
    if loc[0] == "judges":
        hint = f"a judge is given by name only, one of this server's: {', '.join(judges)}"
    else:
        allowed = _MAY_SET.get(shape, "nothing else here")
        # a typo'd key gets the did-you-mean a config file's unknown key gets
        close = difflib.get_close_matches(loc[-1], re.findall(r"\w+", allowed), n=1)
        hint = f"it may set {allowed}" + (f" (did you mean {close[0]!r}?)" if close else "")
    return SettingsError(f"{key}: a request may not set this; {hint}. The generator, upstream, keys, cache, "
                         "templates and models are the server's", key)


def _bound_hint(key: str, limits: ServerOptions | None) -> str:
    section, _, name = key.partition(".")
    bound = BOUNDS.get((section, name))
    if bound is None or limits is None:
        return ""
    return f"; this server allows a whole number, at most {getattr(limits, bound)} (server.{bound})"


def _allowed(given: dict[str, Any], where: str, judges: Sequence[str],
             limits: ServerOptions | None) -> dict[str, Any]:
    """`given` checked against the allow-list: its keys, their JSON types, judge names."""
    if isinstance(given.get("judges"), list):
        given = {**given, "judges": expand(given["judges"])}
    try:
        checked = RequestSettings.model_validate(given)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        extra = next((e for e in errors if e["type"] == "extra_forbidden"), None)
        if extra is not None:
            raise _refused_key(extra, where, judges) from None
        message, key = describe(exc, where)
        raise SettingsError(message + _bound_hint(key.removeprefix(f"{where}."), limits), key) from None
    values = checked.model_dump(exclude_unset=True)
    for i, judge in enumerate(values.get("judges") or []):
        if judge["name"] not in judges:
            key = f"{where}.judges.{i}.name"
            raise SettingsError(f"{key}: judge {judge['name']!r} is not one this server loaded at start-up "
                                f"({', '.join(judges)}); judges load with the server only (its config's "
                                "`judges:`)", key)
    return values


def override(defaults: ExperimentConfig, given: Any, where: str = "a2c",
             limits: ServerOptions | None = None) -> ExperimentConfig:
    """The server's settings with a request's `a2c` object on top: `variation` and `ask_to_choose` key by
    key (`a2c`, its earlier name, still read), judges
    by name from the server's own (with the server's options), the rest replaced. Judges given without
    `entropy_judge` also reset it (the old one may not be among them). With `limits`, the result is held to
    the server's bounds."""
    if not given:
        return defaults
    if not isinstance(given, dict):
        raise SettingsError(f"{where}: expected an object of settings ({', '.join(SETTING_KEYS)})", where)
    try:
        given = renamed_keys(given, RENAMED_SECTIONS, f"{where}.")
    except ValueError as exc:
        raise SettingsError(str(exc), where) from None
    server_judges = {spec.name: spec.model_dump(mode="json") for spec in defaults.judges}
    values = _allowed(given, where, list(server_judges), limits)
    merged = defaults.model_dump(mode="json", include=set(SETTING_KEYS))
    for key, value in values.items():
        if key in _MERGED:
            merged[key] = {**merged[key], **value}
        elif key == "judges":
            merged[key] = [server_judges[judge["name"]] for judge in value]
        else:
            merged[key] = value
    if "judges" in values and "entropy_judge" not in values:
        merged["entropy_judge"] = None
    settings = answer_settings(merged, where)
    if limits is not None:
        check_limits(settings, limits, where)
    return settings


def _pairs(n: int) -> int:
    return n * (n - 1) // 2


def model_calls(settings: ExperimentConfig) -> int:
    """The most model calls one question can cost with these settings, counted before any is made: a
    paraphrase per technique (each retried once at most), a long and a short answer per candidate, with
    A2C on a fresh paraphrase per technique (retried once at most) and a rank prompt per candidate, and for
    a judge that asks a model one call per pair of candidates of each source (both orders if directional)."""
    var = settings.variation
    techniques, sampled = len(var.techniques), len(var.temperatures) * var.samples
    candidates = techniques + sampled
    calls = 2 * techniques + 2 * candidates
    if settings.ask_to_choose.enabled:
        calls += 2 * techniques + candidates
    for spec in settings.judges:
        if JUDGES.get(spec.name).takes_run_generator:
            orders = 2 if spec.options.get("directional") else 1
            calls += orders * (_pairs(techniques) + _pairs(sampled))
    return calls


def check_limits(settings: ExperimentConfig, limits: ServerOptions, where: str = "a2c") -> None:
    """Refuse settings past the server's bounds, naming the setting and the bound."""
    prefix = f"{where}." if where else ""
    for (section, name), bound in BOUNDS.items():
        value, limit = getattr(getattr(settings, section), name), getattr(limits, bound)
        if value > limit:
            key = f"{prefix}{section}.{name}"
            raise SettingsError(f"{key}: {value} is more than this server allows: at most {limit} "
                                f"(server.{bound})", key)
    calls = model_calls(settings)
    if calls > limits.max_calls_per_request:
        var = settings.variation
        raise SettingsError(
            f"{where or 'settings'}: these settings could cost {calls} model calls for one question "
            f"({len(var.techniques)} technique(s), {len(var.temperatures)} temperature(s) x {var.samples} "
            f"sample(s), judges {', '.join(j.name for j in settings.judges)}), more than this server allows: "
            f"at most {limits.max_calls_per_request} (server.max_calls_per_request); ask with fewer "
            "techniques, temperatures or samples", where or None)
