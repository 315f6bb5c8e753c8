"""`a2c probe "QUESTION"` (or `--questions FILE`): paraphrase and temperature variation in the terminal.

Prints the paraphrases, each answer, the judge's agreement matrix, Cons_sem, the clustering entropy and
the Ask-to-Choose answer. Many questions (a JSONL/CSV/parquet file, read by the `file` dataset loader) go
through batched passes of `PROBE_BLOCK` questions: every stage and the judge see a block at once, and a
block's results are printed and written before the next is asked, so a file of 100,000 questions is
never held whole. `--json PATH` writes the same results for programs, streamed the same way. For a served
model (`--base-url`), the server is checked first so an unreachable one fails in seconds with the URL in
the message, not after every retry.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a2c.cli.argtypes import RegistryNames, finite_number, whole_number
from a2c.common.errors import A2CError
from a2c.common.untrusted import has_surrogate, is_blank, printable
from a2c.common.wording import plural

if TYPE_CHECKING:
    from a2c.choose import Choice
    from a2c.llm import GeneratorConfig
    from a2c.qa.config import A2CConfig, VariationConfig


class ProbeInputError(A2CError):
    """A question that cannot be asked (empty or only whitespace), or no question at all."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "probe", help="vary one question, show answers, agreement and the A2C choice",
        description="Ask one question (or every question of --questions FILE, in one batched pass) the "
        "way `a2c run` does: one paraphrase per technique and one sample per temperature, each answered; "
        "then print the answers, the judge's agreement matrices, Cons_sem, the clustering entropy and "
        "the Ask-to-Choose answer. Runs the embedded model in-process by default, or a served one with "
        "--base-url; a line per stage on stderr says where it is.")
    parser.add_argument("question", nargs="?", help="the question to ask (or --questions FILE)")
    parser.add_argument("--questions", type=Path, metavar="FILE",
                        help="many questions, batched 256 at a time: a .jsonl, .csv or .parquet file with a "
                        "`question` column (and optionally `id`; rename with --column)")
    parser.add_argument("--column", action="append", default=[], metavar="FIELD=NAME",
                        help="which column of --questions holds a field, e.g. question=prompt, id=qid "
                        "(repeatable)")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="also write the results as JSON: per question its paraphrases, answers, "
                        "matrices, Cons_sem, entropy and A2C choices")
    parser.add_argument("--base-url", action="append", dest="base_urls",
                        help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (repeatable)")
    parser.add_argument("--model",
                        help="model name (served name with --base-url; default: the embedded model)")
    parser.add_argument("--backend", choices=RegistryNames("a2c.llm.config:BACKENDS"), metavar="BACKEND",
                        help="%(choices)s (default: openai with --base-url, else transformers)")
    parser.add_argument("--judge", default="embedding", help="judge for the matrix (default: embedding)")
    parser.add_argument("--config", type=Path, metavar="CONFIG",
                        help="decode as this QA experiment config does: its variation (techniques, "
                        "temperatures, top_p, every token budget), a2c settings and seed")
    parser.add_argument("--selection", action="append", default=[], metavar="NAME",
                        help="also pick one answer per source with this selection method: a2c, usc, medoid "
                        "(under --judge), majority_cluster (repeatable)")
    parser.add_argument("--calibration", type=Path, metavar="FILE",
                        help="calibration.json of `a2c calibrate`: also print the calibrated confidence and "
                        "whether to answer or decline (the model and settings must be the calibration's "
                        "run's: use its config with --config)")
    parser.add_argument("--temperatures", type=finite_number(0.0, inclusive=True), nargs="+",
                        help="sampling temperatures (finite, >= 0; default: the config's, else 0.25 0.5 "
                        "0.75 1.0)")
    parser.add_argument("--timeout", type=finite_number(0.0, inclusive=False),
                        help="seconds per HTTP request attempt (openai backend; default 120)")
    parser.add_argument("--retries", type=whole_number(0), metavar="N",
                        help="retries after the first attempt on 429/5xx/connection errors/timeouts "
                        "(openai backend; default 5)")
    parser.add_argument("--seed", type=int,
                        help="seed of every sampled prompt: the same seed asks the same prompts and, from "
                        "the cache, gets the same answers (default: the config's, else 0)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the request cache")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bars (the per-stage lines on stderr stay)")
    parser.set_defaults(handler=_probe)


def _generator_config(args: argparse.Namespace) -> GeneratorConfig:
    from pydantic import ValidationError

    from a2c.llm import GeneratorConfig

    fields: dict[str, object] = {"backend": args.backend or ("openai" if args.base_urls else "transformers")}
    if args.base_urls:
        fields["base_urls"] = tuple(args.base_urls)
    if args.model:
        fields["model"] = args.model
    if args.no_cache:
        fields["cache"] = None
    if args.timeout is not None:
        fields["timeout"] = args.timeout
    if args.retries is not None:
        fields["max_retries"] = args.retries
    try:
        return GeneratorConfig(**fields)
    except ValidationError as exc:  # its messages only: the inputs it would quote may hold a key
        raise ProbeInputError("; ".join(f"{'.'.join(map(str, e['loc']))}: "
                                        f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors())
                              ) from None


def _matrix_text(matrix: object, labels: list[str]) -> str:
    import numpy as np

    m = np.asarray(matrix)
    head = "      " + " ".join(f"{label:>6}" for label in labels)
    rows = [f"{label:>6}" + " ".join(f"{v:6.2f}" for v in row) for label, row in zip(labels, m, strict=True)]
    return "\n".join([head, *rows])


@dataclass(frozen=True)
class SetResult:
    """One source of variation of one probed question: its answers, the judge's matrix and set metrics."""

    labels: list[str]  # c1, c2, ... / t1, t2, ...
    asked: list[str]
    answers: list[str]
    matrix: list[list[float]]
    cons_sem: float | None
    entropy: float | None
    clusters: int


@dataclass(frozen=True)
class ProbeResult:
    """What the probe found for one question (what `--json` writes)."""

    id: str
    question: str
    paraphrases_failed: int
    # the paraphrases that failed their checks: technique, text (what the model wrote) and problem
    failed_paraphrases: list[dict[str, str | None]]
    sets: dict[str, SetResult]  # by source: paraphrase, temperature
    choices: list[dict[str, Any]]  # one per rank prompt: source, slot, reply, option, method, text
    answer: str | None  # the A2C answer: the most chosen option
    # selection method → source → its pick: text, candidate, dont_know, calls, reply, parse
    selections: dict[str, dict[str, dict[str, Any]]]
    # with --calibration: signal, source, score, confidence, declined, answer, decline_below
    decision: dict[str, Any] | None = None


PROBE_BLOCK = 256  # questions of --questions answered per batched pass (and held at a time)
CHOICE_FIELDS = {"source", "slot", "shown_question", "reply", "option", "method", "text"}
PICK_FIELDS = {"text", "candidate", "dont_know", "calls", "reply", "parse"}


def _asked(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(id, question) pairs: the one on the command line or every row of --questions."""
    if args.questions is not None:
        if args.question is not None:
            raise ProbeInputError("give one question or --questions FILE, not both")
        from pydantic import ValidationError

        from a2c.qa.data import ColumnMap

        columns: dict[str, str] = {}
        for item in args.column:
            field, sep, name = item.partition("=")
            if not sep or not field.strip() or not name.strip():
                raise ProbeInputError(f"--column {item!r}: expected FIELD=NAME, e.g. question=prompt")
            columns[field.strip()] = name.strip()
        try:
            column_map = ColumnMap(**columns)
        except ValidationError as exc:
            raise ProbeInputError(f"--column: {exc.errors()[0]['loc'][0]}: not a field; fields are "
                                  f"{', '.join(ColumnMap.model_fields)}") from None
        return [(r.id, r.question) for r in _load_questions(args.questions, column_map)]
    if args.question is None:
        raise ProbeInputError('no question: give one (a2c probe "Why is the sky blue?") or --questions FILE')
    if is_blank(args.question):  # zero-width spaces, NBSP or tabs alone ask nothing
        raise ProbeInputError("the question is empty (or only invisible characters): give the text to ask, "
                              'e.g. a2c probe "Why is the sky blue?"')
    if has_surrogate(args.question):
        raise ProbeInputError("the question is not UTF-8 text (the terminal or shell passed other bytes)")
    return [("q0", args.question)]


def _load_questions(path: Path, columns: Any) -> list[Any]:
    """The file's records; a missing column or a non-UTF-8 file told in probe's own terms (`--column`)."""
    from a2c.data.tables import ENCODING_HINT, MissingColumnError
    from a2c.qa.data import DatasetError, load_records

    try:
        return load_records("file", path, columns=columns)
    except MissingColumnError as exc:
        fields = {column: field for field, column in columns.model_dump().items() if column is not None}
        flags = " ".join(f"--column {fields.get(c, c)}=NAME" for c in exc.missing)
        example = f" (e.g. --column {fields.get(exc.missing[0], exc.missing[0])}={exc.available[0]})" \
            if exc.available else ""
        raise ProbeInputError(f"{path}: no column {', '.join(map(repr, exc.missing))}; the file has "
                              f"{', '.join(map(repr, exc.available)) or 'no columns'}",
                              hint=f"name the file's column with {flags}{example}") from None
    except DatasetError as exc:
        if exc.hint != ENCODING_HINT:
            raise
        raise ProbeInputError(str(exc), hint="save the file as UTF-8 (probe reads UTF-8 text)") from None


def probe_results(asked: Sequence[tuple[str, str]], choices: Sequence[Choice], judge: str,
                  techniques: int) -> list[ProbeResult]:
    """Per question: its answer sets with the matrices and set scores the run's judges stage gave them."""
    from a2c.qa.rows import SOURCES

    results = []
    for (qid, question), choice in zip(asked, choices, strict=True):
        sets: dict[str, SetResult] = {}
        for source in SOURCES:
            pairs = [(g, t) for g, t in zip(choice.generations, choice.candidates, strict=True)
                     if g.source == source]
            mine, texts = [g for g, _ in pairs], [t for _, t in pairs]
            judged = choice.judged[judge][source]
            sets[source] = SetResult([_label(g.source, g.slot) for g in mine], [g.asked for g in mine], texts,
                                     judged.matrix, judged.scores.cons_sem, judged.scores.entropy,
                                     judged.scores.clusters)
        answered = sum(g.source == "paraphrase" for g in choice.generations)
        failed = [p.model_dump(include={"technique", "text", "problem"})
                  for p in choice.paraphrases if not p.ok]
        results.append(ProbeResult(qid, question, techniques - answered, failed, sets,
                                   [c.model_dump(include=CHOICE_FIELDS) for c in choice.choices],
                                   choice.answer,
                                   {method: {source: pick.model_dump(include=PICK_FIELDS)
                                             for source, pick in per_source.items()}
                                    for method, per_source in choice.selections.items()},
                                   None if choice.decision is None else asdict(choice.decision)))
    return results


def _print(result: ProbeResult, judge_name: str) -> None:
    print("paraphrases and answers:")
    for source in result.sets.values():
        for label, asked, text in zip(source.labels, source.asked, source.answers, strict=True):
            print(f"  {label}  asked: {asked}\n       answer: {text}")
    if result.paraphrases_failed:
        print(f"  ({plural(result.paraphrases_failed, 'paraphrase')} failed their checks and are left out, "
              "as in `a2c run`:)")
        dim, plain = ("\x1b[2m", "\x1b[0m") if sys.stdout.isatty() else ("", "")
        for failed in result.failed_paraphrases:
            print(f"{dim}  ✗ {failed['technique']}: {printable(failed['text'] or '') or '(empty)'}"
                  f"  [{failed['problem']}]{plain}")
    for name, source in zip(("paraphrases", "temperatures"), result.sets.values(), strict=True):
        if not source.labels:  # every paraphrase failed its checks: no answers, so no matrix to print
            print(f"\n{judge_name} agreement matrix ({name}): none, no {name[:-1]} was answered")
            continue
        print(f"\n{judge_name} agreement matrix ({name}):\n{_matrix_text(source.matrix, source.labels)}")
        print(f"Cons_sem = {_show(source.cons_sem)}   entropy = {_show(source.entropy)} bits "
              f"({source.clusters} clusters)")
    print("\nAsk-to-Choose:")
    for choice in result.choices:
        chosen = choice["text"] if choice["text"] is not None else "UNPARSED"
        print(f"  {_label(choice['source'], choice['slot'])}  reply {choice['reply'].strip()!r} → {chosen}")
    print(f"\nA2C answer: {result.answer if result.answer is not None else '(no reply could be parsed)'}")
    decision = result.decision
    if decision is not None:
        verdict = "DECLINED" if decision["declined"] else "answered"
        answer = decision["answer"] if decision["answer"] is not None else "(no reply of this source parsed)"
        print(f"\nAnswer or decline: {decision['signal']} of the {decision['source']} answers = "
              f"{_show(decision['score'])}, confidence {_show(decision['confidence'])} → {verdict}: {answer}")
    if result.selections:
        print("\nSelection (one answer per source):")
    for method, per_source in result.selections.items():
        for source_name, pick in per_source.items():
            picked = pick["text"] if pick["text"] is not None else "(no pick)"
            shown = f" (reply {pick['reply'].strip()!r})" if pick["reply"] is not None else ""
            print(f"  {method:<17} {source_name:<12} → {picked}{shown}")


def _probe(args: argparse.Namespace) -> int:
    from a2c.choose import AskToChoose
    from a2c.cli.outputs import check_output_file, json_list_file
    from a2c.judges import JudgeSpec
    from a2c.llm import build_generator
    from a2c.llm.server import check_servers
    from a2c.qa.selection import SELECTION_METHODS

    if args.json is not None:  # refused before any model call, not after the work is done
        check_output_file(args.json, "--json")
    asked = _asked(args)
    config = _generator_config(args)
    check_servers([config])
    generator = build_generator(config)
    for name in args.selection:
        SELECTION_METHODS.get(name)  # an unknown name: one line with the closest names
    variation, a2c, seed = _decoding(args)
    calibration = None
    if args.calibration is not None:
        from a2c.qa.calibration import read_calibration

        calibration = read_calibration(args.calibration)
    wrapper = AskToChoose(generator, variation=variation, a2c=a2c, seed=seed, selection=args.selection,
                          calibration=calibration)
    # checked before any model loads: an unknown name is one line with the closest names
    judge = JudgeSpec.parse(args.judge) if not args.no_cache else JudgeSpec.of(args.judge, cache=None)
    # a judge the calibration reads is scored with the options the calibration's run gave it
    calibrated = set() if calibration is None else {j["name"] for j in calibration.judges}
    judges = [] if judge.name in calibrated else [judge]
    head = {"model": f"{generator.backend}/{generator.model}", "judge": args.judge, "seed": seed,
            "temperatures": variation.temperatures}
    with json_list_file(args.json, head, "questions") if args.json is not None else nullcontext(None) as add:
        # one batched pass per block of questions, judged by the run's own judges stage; a block's results
        # are printed (and written) before the next is asked, so a long --questions file is never held
        for start in range(0, len(asked), PROBE_BLOCK):
            block = asked[start:start + PROBE_BLOCK]
            where = f"questions {start + 1}-{start + len(block)} of {len(asked)}: " \
                if len(asked) > PROBE_BLOCK else ""
            choices = wrapper.answer_many([q for _, q in block], judges=judges,
                                          log=partial(_prefixed_log, where),
                                          progress=not args.no_progress)
            for number, result in enumerate(probe_results(block, choices, judge.name,
                                                          len(wrapper.config.variation.techniques)), start):
                if number:
                    print("\n" + "=" * 80 + "\n")
                print(f"question: {result.question}" + (f"  [{result.id}]" if args.questions else "")
                      + f"\nmodel: {generator.backend}/{generator.model}\n")
                _print(result, args.judge)
                if add is not None:
                    add(asdict(result))
    if args.json is not None:
        print(f"\nresults written to {args.json}")
    return 0


def _decoding(args: argparse.Namespace) -> tuple[VariationConfig, A2CConfig, int]:
    """The variation and A2C settings and seed: a QA config's (`--config`), else the defaults a run has;
    `--temperatures` and `--seed` override either."""
    from a2c.qa.config import A2CConfig, ExperimentConfig, VariationConfig
    from a2c.run.config_file import load_config

    variation, a2c, seed = VariationConfig(), A2CConfig(), 0
    if args.config is not None:
        config = load_config(args.config)
        if not isinstance(config, ExperimentConfig):
            raise ProbeInputError(f"--config {args.config}: a {config.task} config; probe takes a QA config")
        variation, a2c, seed = config.variation, config.ask_to_choose, config.seed
    if args.temperatures:
        variation = variation.model_copy(update={"temperatures": list(args.temperatures)})
    return variation, a2c, seed if args.seed is None else args.seed


def _prefixed_log(prefix: str, line: str) -> None:
    _log(prefix + line)


def _log(line: str) -> None:
    """Where the probe is: on stderr, so stdout holds the results alone (control characters escaped: a
    line may quote a file name)."""
    print(printable(line), file=sys.stderr, flush=True)


def _label(source: str, slot: int) -> str:
    """c1, c2, ... for paraphrase contexts; t1, t2, ... for temperature samples."""
    return f"{'c' if source == 'paraphrase' else 't'}{slot + 1}"


def _show(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
