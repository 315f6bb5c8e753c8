"""`a2c probe "QUESTION"`: paraphrase and temperature variation for one question, in the terminal.

Prints the paraphrases, each answer, the judge's agreement matrix, Cons_sem, the clustering entropy and
the Ask-to-Choose answer. For a served model (`--base-url`), the server is checked first so an
unreachable one fails in seconds with the URL in the message, not after every retry.
"""

from __future__ import annotations

import argparse

from a2c.errors import A2CError


class ServerUnreachableError(A2CError):
    """The OpenAI-compatible server does not answer at the given base URL."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("probe",
                                   help="vary one question, show answers, agreement and the A2C choice")
    parser.add_argument("question", help="the question to ask")
    parser.add_argument("--base-url", action="append", dest="base_urls",
                        help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (repeatable)")
    parser.add_argument("--model",
                        help="model name (served name with --base-url; default: the embedded model)")
    parser.add_argument("--backend", choices=["transformers", "vllm", "openai"],
                        help="default: openai with --base-url, else transformers")
    parser.add_argument("--judge", default="embedding", help="judge for the matrix (default: embedding)")
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.25, 0.5, 0.75, 1.0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the request cache")
    parser.set_defaults(handler=_probe)


def check_server(base_url: str, timeout: float = 5.0) -> None:
    """GET {base_url}/models: any HTTP answer means a server is there; no answer is a clear error."""
    import httpx

    try:
        httpx.get(f"{base_url.rstrip('/')}/models", timeout=timeout)
    except httpx.HTTPError as exc:
        raise ServerUnreachableError(
            f"cannot reach the server at {base_url} ({type(exc).__name__}: {exc}); is it running (e.g. "
            "`python -m vllm.entrypoints.openai.api_server --model NAME`) and is the URL right "
            "(it usually ends in /v1)?") from None


def _generator_config(args: argparse.Namespace) -> object:
    from a2c.llm import GeneratorConfig

    fields: dict[str, object] = {"backend": args.backend or ("openai" if args.base_urls else "transformers")}
    if args.base_urls:
        fields["base_urls"] = tuple(args.base_urls)
    if args.model:
        fields["model"] = args.model
    if args.no_cache:
        fields["cache"] = None
    return GeneratorConfig(**fields)


def _matrix_text(matrix: object, labels: list[str]) -> str:
    import numpy as np

    m = np.asarray(matrix)
    head = "      " + " ".join(f"{label:>6}" for label in labels)
    rows = [f"{label:>6}" + " ".join(f"{v:6.2f}" for v in row) for label, row in zip(labels, m, strict=True)]
    return "\n".join([head, *rows])


def _probe(args: argparse.Namespace) -> int:
    from a2c.choose import AskToChoose
    from a2c.judges import build_judge
    from a2c.llm import build_generator
    from a2c.metrics import cons_sem, semantic_clusters, semantic_entropy

    config = _generator_config(args)
    if config.backend == "openai":  # type: ignore[attr-defined]
        for url in config.base_urls:  # type: ignore[attr-defined]
            check_server(url)
    generator = build_generator(config)  # type: ignore[arg-type]
    wrapper = AskToChoose(generator, temperatures=args.temperatures, seed=args.seed)
    result = wrapper.answer(args.question)
    n_c = len(wrapper.techniques)
    labels = [f"c{i + 1}" for i in range(n_c)] + [f"t{j + 1}" for j in range(len(result.candidates) - n_c)]
    print(f"question: {args.question}\nmodel: {generator.backend}/{generator.model}\n")
    print("paraphrases and answers:")
    for label, asked, answer in zip(labels, result.asked, result.candidates, strict=True):
        print(f"  {label}  asked: {asked}\n       answer: {answer}")
    judge = build_judge(args.judge, **({"cache": None} if args.no_cache else {}))
    for name, part in (("paraphrases", slice(0, n_c)), ("temperatures", slice(n_c, None))):
        texts, names = result.candidates[part], labels[part]
        matrix = judge.matrix(args.question, texts)
        clusters = semantic_clusters(judge.equivalent(matrix))
        print(f"\n{args.judge} agreement matrix ({name}):\n{_matrix_text(matrix, names)}")
        print(f"Cons_sem = {_show(cons_sem(matrix))}   entropy = {_show(semantic_entropy(clusters))} bits "
              f"({len(set(clusters))} clusters)")
    print("\nAsk-to-Choose:")
    for choice in result.choices:
        slot = f"{'c' if choice.item.source == 'paraphrase' else 't'}{choice.item.slot + 1}"
        chosen = choice.text if choice.text is not None else "UNPARSED"
        print(f"  {slot}  reply {choice.reply.strip()!r} → {chosen}")
    print(f"\nA2C answer: {result.answer if result.answer is not None else '(no reply could be parsed)'}")
    return 0


def _show(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
