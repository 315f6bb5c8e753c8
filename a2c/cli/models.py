"""`a2c models prepare`: convert a GGUF model (default: the embedded SmolLM2) to a folder vLLM loads;
`a2c models path`: where an embedded model's GGUF file is, for a server such as llama.cpp's to load."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("models", help="locate the embedded models, prepare them for vllm",
                                   description="The models that ship inside PyPI packages: where their "
                                   "GGUF file is, and a copy vLLM can load.")
    sub = parser.add_subparsers(dest="models_command", required=True, metavar="ACTION")
    prepare = sub.add_parser("prepare", help="convert a GGUF model to a safetensors folder (one-off)",
                             description="Dequantize a GGUF model and write it as a float32 safetensors "
                             "folder with its tokenizer, the format the vllm backend loads.")
    prepare.add_argument("model", nargs="?", default=None,
                         help="embedded model name or path to a .gguf file (default: the embedded SmolLM2)")
    prepare.add_argument("--output", type=Path,
                         help="folder to write (default: models/NAME, where the vllm backend looks)")
    prepare.set_defaults(handler=_prepare)
    path = sub.add_parser("path", help="print the path of an embedded model's GGUF file",
                          description="Print the path of an embedded model's GGUF file, e.g. for "
                          "llama.cpp's server: --model \"$(a2c models path)\".")
    path.add_argument("model", nargs="?", default=None,
                      help="embedded model name (default: the embedded SmolLM2)")
    path.set_defaults(handler=_path)


def _prepare(args: argparse.Namespace) -> int:
    from a2c.cli.outputs import check_output_folder
    from a2c.llm.convert import convert_gguf, prepared_dir
    from a2c.llm.embedded import DEFAULT_MODEL

    model = args.model or DEFAULT_MODEL
    output = args.output or prepared_dir(model)
    check_output_folder(output, "--output")
    convert_gguf(model, output)
    print(f"use it with: backend: vllm, model: {output}")
    return 0


def _path(args: argparse.Namespace) -> int:
    from a2c.hub import ModelNotFoundError
    from a2c.llm.embedded import DEFAULT_MODEL, EMBEDDED_MODELS, embedded_gguf

    model = args.model or DEFAULT_MODEL
    if model not in EMBEDDED_MODELS:
        raise ModelNotFoundError(f"{model!r} is not an embedded model",
                                hint=f"`a2c models path` knows {', '.join(EMBEDDED_MODELS)}")
    print(embedded_gguf(model))
    return 0
