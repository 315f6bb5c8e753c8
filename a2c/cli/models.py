"""`a2c models prepare`: convert a GGUF model (default: the embedded SmolLM2) to a folder vLLM loads."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("models", help="prepare models for the vllm backend")
    sub = parser.add_subparsers(dest="models_command", required=True, metavar="ACTION")
    prepare = sub.add_parser("prepare", help="convert a GGUF model to a safetensors folder (one-off)")
    prepare.add_argument("model", nargs="?", default=None,
                         help="embedded model name or path to a .gguf file (default: the embedded SmolLM2)")
    prepare.add_argument("--output", type=Path,
                         help="folder to write (default: models/NAME, where the vllm backend looks)")
    prepare.set_defaults(handler=_prepare)


def _prepare(args: argparse.Namespace) -> int:
    from a2c.llm.convert import convert_gguf, prepared_dir
    from a2c.llm.embedded import DEFAULT_MODEL

    model = args.model or DEFAULT_MODEL
    output = args.output or prepared_dir(model)
    convert_gguf(model, output)
    print(f"use it with: backend: vllm, model: {output}")
    return 0
