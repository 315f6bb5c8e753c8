"""`a2c judge`: agreement matrices of some answers to one question, for trying judges and presets by hand."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from types import NoneType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from a2c.common.errors import A2CError

_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "judge", help="score answers to one question with pairwise judges (matrix, Cons_sem, clusters)",
        description="Score every pair of the given answers with one or more judges and print each "
        "judge's agreement matrix, Cons_sem, semantic clusters and entropy; --list shows the judges "
        "and presets.")
    parser.add_argument("answers", nargs="*", help="the answers to compare")
    parser.add_argument("--question", "-q", default="", help="the question (the llm judge shows it)")
    parser.add_argument("--judge", "-j", action="append", dest="judges", metavar="NAME",
                        help="judge name (repeatable); default: the judges of --preset")
    parser.add_argument("--preset", default="offline",
                        help="judge preset name or YAML path (default: offline)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the judge cache")
    parser.add_argument("--list", action="store_true",
                        help="list judge names and shipped presets (with -j: those judges' options)")
    parser.set_defaults(handler=_judge)


def _judge(args: argparse.Namespace) -> int:
    from importlib import resources
    from pathlib import Path

    import numpy as np

    from a2c.judges import JUDGES, build_judge, load_preset
    from a2c.metrics import judge_scores, semantic_clusters

    if args.list and args.judges:
        for name in args.judges:
            lines = list(_option_lines(name))  # an unknown name fails before anything is printed
            print(f"{name}:", *lines, sep="\n")
        return 0
    if args.list:
        presets = sorted(p.stem for p in Path(str(resources.files("a2c.resources.judges"))).glob("*.yaml"))
        print("judges: " + ", ".join(JUDGES.names()))
        print("presets: " + ", ".join(presets))
        return 0
    if len(args.answers) < 2:
        raise A2CError("give at least two answers to compare")
    cache = {"cache": None} if args.no_cache else {}
    if args.judges:
        judges = [build_judge(name, **cache) for name in args.judges]
    else:
        preset = load_preset(args.preset)
        judges = [build_judge(spec.name, **{**spec.options, **cache}) for spec in preset.judges]
    for judge in judges:
        m = judge.matrix(args.question, args.answers)
        equivalent = judge.equivalent(m)
        scores = judge_scores(m, equivalent)  # what a run's metrics stage computes for the same matrix
        print(f"\n{judge.name} (threshold {judge.threshold:g}, "
              f"{'higher' if judge.higher_is_consistent else 'lower'} = more consistent)")
        print(np.array2string(m, precision=3, suppress_small=True))
        print(f"Cons_sem {scores.cons_sem:.3f} | clusters {semantic_clusters(equivalent)} | "
              f"entropy {scores.entropy:.3f} bits")
    return 0


def _option_lines(name: str) -> Iterator[str]:
    """One line per option, read off the judge's `Options` model: type, bounds, default, description."""
    from a2c.judges import JUDGES

    for key, field in JUDGES.get(name).Options.model_fields.items():
        bounds = "".join(f" {op} {getattr(m, attr)}" for m in field.metadata for attr, op in _BOUNDS
                         if hasattr(m, attr))
        default = "required" if field.is_required() else f"default {json.dumps(field.default, default=str)}"
        yield f"  {key}: {_type_name(field.annotation)}{bounds}, {default} — {field.description}"


def _type_name(annotation: Any) -> str:
    """`int | None` rather than typing's reprs; Annotated metadata (tags, bounds) is shown elsewhere, and a
    generator config is one `GeneratorConfig` whichever backend's model it is."""
    from a2c.llm.config import GeneratorConfig

    if isinstance(annotation, type) and issubclass(annotation, GeneratorConfig):
        return GeneratorConfig.__name__
    if get_origin(annotation) is Annotated:
        return _type_name(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        return " | ".join(dict.fromkeys(_type_name(a) for a in get_args(annotation)))
    return "null" if annotation is NoneType else getattr(annotation, "__name__", str(annotation))
