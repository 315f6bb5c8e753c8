"""Rerun the quickstart from scratch and write its figures into README.md and the quickstart docs page.

Run: `.venv/bin/python benchmarks/quickstart_figures.py` from the repository root. It runs
`a2c run experiments/quickstart.yaml` as a user would, in a temporary folder of its own (its own run folder
and a fresh request cache there, never `runs/quickstart` or `.a2c-cache` of the checkout), timed from the
command's start to its end. A second, untimed `a2c run` adds `selection: [a2c, usc, medoid,
majority_cluster]` to the same run folder for the "Is A2C worth its calls?" table (only its selection stage
makes new model calls); `--no-selection` leaves it out. The figures are read from the run's summary.json
and timings.json with the report's own table code, so they are what `a2c run` and report.md show.

Each figure block sits between two marker comments (`<!-- quickstart-figures:start -->` and `...:end`,
likewise `quickstart-signal` and `quickstart-selection` on the docs page) and is replaced whole; the text
around the markers is left as it is, and writing the same figures twice changes nothing. `--from-run DIR`
writes the figures of a finished run folder instead of running (its wall time from the folder's
timings.json, its date from that file's time, the machine: this one). `--print` prints the blocks and
writes no file.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a2c.qa.rows import Phase
    from a2c.qa.summary import QASummary

ROOT = Path(__file__).resolve().parent.parent
CONFIG = Path("experiments/quickstart.yaml")
README = Path("README.md")
DOCS = Path("docs/getting-started/quickstart.md")
COMMAND = ".venv/bin/python benchmarks/quickstart_figures.py"
SELECTION = ["a2c", "usc", "medoid", "majority_cluster"]
# the selection table's columns the docs page leaves out (report.md has them all)
SELECTION_LEFT_OUT = {"picked", "unparsed"}
PROVENANCE = "quickstart-figures.json"  # written into the run folder: when, where, how long
SIGNAL_ROWS = 5  # the best-ranked signals the docs page lists


class FiguresError(Exception):
    """A file this script reads or writes is not as it expects (one line: the file and what is wrong)."""


@dataclasses.dataclass(frozen=True)
class Machine:
    """Where the figures were measured: what decides their time, and which CPU kernels computed them."""

    cpu: str
    cores: int
    avx512: bool
    system: str
    python: str
    torch: str

    def describe(self) -> str:
        """One line for the docs: CPU, cores, instruction set, versions."""
        isa = "AVX-512" if self.avx512 else "no AVX-512"
        return (f"{self.cpu} ({self.cores} cores, {isa}), "
                f"{self.system}, Python {self.python}, torch {self.torch}")


@dataclasses.dataclass(frozen=True)
class Figures:
    """What the blocks show: the before → after table (the report's header less its model column), the
    signal and selection tables, the run's counts, and when, where and how long."""

    header: list[str]
    rows: list[list[str]]
    signal: list[list[str]]
    signal_undefined: list[tuple[str, str]]  # the undefined signal rows: their cell, their phase
    signal_total: int
    selection: list[list[str]] | None
    selection_calls: int  # the selection stage's model calls (USC)
    questions: int
    readme_columns: list[tuple[int, str]]  # the README's abridged columns: index in `header`, label
    paraphrase_questions: int  # questions with a paraphrase left (the accuracy means are over these)
    paraphrase_consistent: tuple[int, int]  # ... with two answers or more, before and after A2C
    paraphrases: int | None
    paraphrases_failed: int | None
    choices: dict[str, tuple[int, int, int]]  # source: rank prompts, "don't know", unparsed
    model_calls: int
    wall_seconds: float
    date: str
    machine: Machine
    model: str


def this_machine() -> Machine:
    """This machine: the CPU's model name and flags from /proc/cpuinfo (platform's name where there is
    none), its cores, the versions that compute the figures."""
    name, flags = "", ""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        info = ""
    for line in info.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "model name" and not name:
            name = value
        elif key == "flags" and not flags:
            flags = value
    try:
        torch = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch = "not installed"
    return Machine(cpu=name or platform.processor() or platform.machine() or "unknown CPU",
                   cores=os.cpu_count() or 1, avx512="avx512f" in flags.split(),
                   system=f"{platform.system()} {platform.machine()}", python=platform.python_version(),
                   torch=torch)


def duration(seconds: float) -> str:
    """`9 min 12 s` (rounded to the second)."""
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FiguresError(f"{path}: no such file (is this a finished a2c run folder?)") from None
    except (OSError, ValueError) as exc:
        raise FiguresError(f"{path}: not readable as JSON ({exc})") from None


def model_calls(run_dir: Path) -> tuple[int, float, int]:
    """Model calls (generations the request cache did not serve) summed over the stages of timings.json,
    its total seconds, and the selection stage's own calls (USC's; none when A2C alone picks)."""
    path = run_dir / "timings.json"
    data = _read_json(path)
    stages = data.get("stages") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(stages, dict) \
            or not all(isinstance(s, dict) for s in stages.values()):
        raise FiguresError(f"{path}: stages: not a mapping of stage to counts")
    calls = sum(int(s.get("generated", 0)) for s in stages.values())
    return calls, float(data.get("seconds", 0.0)), int(stages.get("selection", {}).get("generated", 0))


def read_figures(run_dir: Path, *, wall_seconds: float, date: str, machine: Machine,
                 calls: int | None = None) -> Figures:
    """The figures of a finished QA run folder, read as the report reads them.

    Args:
        run_dir: the run folder (summary.json and timings.json).
        wall_seconds: how long the run took, as measured by the caller.
        date: when it ran (ISO date).
        machine: where it ran.
        calls: model calls, when the caller counted them (default: timings.json's).

    Returns:
        The figures the blocks show.
    """
    from a2c.common.errors import A2CError
    from a2c.qa.report import before_after_table, selection_table, signal_table
    from a2c.qa.summary import read_summary
    from a2c.run.store import RunFolder

    try:
        summary = read_summary(RunFolder(run_dir), "summary.json", hint=f"a2c report {run_dir}")
    except A2CError as exc:
        raise FiguresError(str(exc)) from None
    table = before_after_table(summary)
    keep = [i for i, name in enumerate(table.header) if name != "model"]
    signal = signal_table(summary)
    ranked = [r for r in signal.rows if r[2] == "before" and not r[6].startswith("undefined")]
    ranked.sort(key=lambda r: -float(r[6].split()[0]))  # by PRR, the docs' order
    methods = {r.method for r in summary.selection}
    selection = None
    if len(methods - {"a2c", "random"}) > 0:
        chosen = selection_table(summary)
        picked = [i for i, name in enumerate(chosen.header)
                  if name not in SELECTION_LEFT_OUT and not name.startswith("Emb-A −")]
        selection = [[row[i] for i in picked] for row in (chosen.header, *chosen.rows)]
    return Figures(
        header=[table.header[i] for i in keep], rows=[[r[i] for i in keep] for r in table.rows],
        signal=[[r[0], r[1], r[5], r[6]] for r in ranked[:SIGNAL_ROWS]],
        signal_undefined=[(r[6], r[2]) for r in signal.rows if r[6].startswith("undefined")],
        signal_total=len(signal.rows),
        selection=selection, selection_calls=model_calls(run_dir)[2], questions=summary.counts.questions,
        readme_columns=_readme_columns([table.header[i] for i in keep], summary),
        paraphrase_questions=_answered(summary, "before"),
        paraphrase_consistent=(_defined(summary, "before"), _defined(summary, "after")),
        paraphrases=summary.counts.paraphrases, paraphrases_failed=summary.counts.paraphrases_failed,
        choices={s: (c.rank_prompts, c.idk, c.unparsed) for s, c in summary.counts.choices.items()},
        model_calls=model_calls(run_dir)[0] if calls is None else calls, wall_seconds=wall_seconds,
        date=date, machine=machine, model=summary.model)


def _readme_columns(header: list[str], summary: QASummary) -> list[tuple[int, str]]:
    """The README's abridged columns: those `a2c run` prints (`a2c.qa.headline.abridged_columns`), all five
    of them (the README's text names each)."""
    from a2c.qa.headline import abridged_columns

    picks = abridged_columns(header, summary)
    if len(picks) != 5:
        raise FiguresError(f"the before → after table lacks some of the README's columns (it has: "
                           f"{', '.join(header)})")
    return picks


def _answered(summary: QASummary, phase: Phase) -> int:
    """Paraphrase sets with an answer: the first similarity's accuracy skips the others."""
    group = summary.group("paraphrase", phase)
    if group is None or not summary.similarities:
        return 0
    return group.sets - group.accuracy[summary.similarities[0]].acc.skipped


def _defined(summary: QASummary, phase: Phase) -> int:
    """Paraphrase sets whose consistency is defined (two answers or more) under the entropy judge."""
    group = summary.group("paraphrase", phase)
    return 0 if group is None else group.sets - group.consistency[summary.entropy_judge].skipped


def _join(parts: list[str]) -> str:
    """Lines of a block, each paragraph wrapped as the pages wrap theirs (a long path or link stays
    whole); tables and fences are kept as they are."""
    return "\n".join(part if part.startswith(("|", "```")) or not part else
                      textwrap.fill(part, width=106, break_long_words=False, break_on_hyphens=False)
                      for part in parts)


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows])


def _abridged(figures: Figures) -> tuple[list[str], list[list[str]]]:
    return ([label for _, label in figures.readme_columns],
            [[r[i] for i, _ in figures.readme_columns] for r in figures.rows])


def _failed(figures: Figures) -> str:
    if figures.paraphrases is None:
        return "the run kept no paraphrases"
    return f"{figures.paraphrases_failed} of {figures.paraphrases} paraphrases failed their checks"


def _choices(figures: Figures) -> str:
    names = {"paraphrase": "paraphrase", "temperature": "temperature"}
    parts = [f"{idk} of {asked} {names.get(source, source)} rank prompts"
             + (f" ({unparsed} unparsed)" if unparsed else "")
             for source, (asked, idk, unparsed) in figures.choices.items()]
    return " and ".join(parts)


def _provenance(figures: Figures) -> str:
    return (f"Measured on {figures.date} on {figures.machine.describe()}: `{COMMAND}` reran "
            f"`a2c run {CONFIG.as_posix()}` from scratch (a run folder and request cache of its own) and "
            "wrote these figures.")


CPU_NOTE = ("Where the CPU's kernels come in: on the same machine (2026-12-02) the script was run twice "
            "more, once with torch's AVX2 kernels instead of this CPU's AVX-512 ones "
            "(`ATEN_CPU_CAPABILITY=avx2`) and once with OpenBLAS's SkylakeX kernels instead of its Haswell "
            "ones (`OPENBLAS_CORETYPE=SkylakeX`), the kernels other x86 CPUs get; every cell and count of "
            "these tables was the same in all three runs (only the time moved). Given the same answers and "
            "rank replies, the R1-A, R1-C, Exact and Cons_lex cells, the don't-know shares and the counts "
            "are token overlaps and counts, the same on any CPU; the embedding (Emb) and NER cells, and the "
            "graph measures of the signal table (U_EigV, U_Deg, U_Ecc, through OpenBLAS: see "
            "[Metrics](../concepts/metrics.md)), go through float kernels and move only where a score lies "
            "within the last bits of a threshold or a tie. The answers and replies are drawn from SmolLM2's "
            "logits as torch's kernels compute them, so a CPU whose kernels round otherwise (an ARM CPU, "
            "say: not measured) can draw another token at a near-tie, and with it change any cell.")


def docs_block(figures: Figures) -> str:
    """The docs page's main block: provenance, counts, the full before → after table, the CPU note."""
    choices = _choices(figures)
    chose = f" A2C's rank prompts chose \"don't know\" in {choices}." if choices else ""
    return _join([
        f"{_provenance(figures)} It took {duration(figures.wall_seconds)} and {figures.model_calls} model "
        f"calls ({figures.model}, nearly all generation on the transformers backend); {_failed(figures)}, "
        f"so {figures.paraphrase_questions} of the {figures.questions} questions keep a paraphrase (the "
        "accuracy of the paraphrase rows averages over them, their consistency over the "
        f"{figures.paraphrase_consistent[0]} before and {figures.paraphrase_consistent[1]} after A2C with "
        f"two answers or more).{chose}",
        "",
        f"Quickstart result ({figures.questions} questions, before → after A2C, accuracy by TruthfulQA's "
        "scoring protocol, consistency as mean Cons_sem per judge; in brackets the 95% interval of after − "
        "before, paired over questions; ↑/↓ only where it excludes 0, `~` where it does not):",
        "",
        _markdown(figures.header, figures.rows),
        "",
        CPU_NOTE,
    ])


def _undefined(figures: Figures) -> str:
    """How many signal rows are undefined, by why, and in which phase."""
    if not figures.signal_undefined:
        return f"all {figures.signal_total} signal rows are defined"
    reasons = sorted({cell for cell, _ in figures.signal_undefined})
    phases = sorted({phase for _, phase in figures.signal_undefined})
    where = f", all {phases[0]} A2C" if len(phases) == 1 else ""
    return (f"{len(figures.signal_undefined)} of the {figures.signal_total} signal rows are "
            + " or ".join(f"`{reason}`" for reason in reasons) + where
            + (" (a score with the same value on every set cannot rank them)"
               if reasons == ["undefined (constant)"] else ""))


def signal_block(figures: Figures) -> str:
    """The best-ranked signals by PRR before A2C, and how many signal rows are undefined."""
    return _join([
        f"Before A2C, the best-ranked signals by PRR (every score oriented higher = more confident; "
        f"{_undefined(figures)}):",
        "",
        _markdown(["signal", "source", "AUROC [95% CI]", "PRR [95% CI]"], figures.signal),
    ])


def selection_block(figures: Figures) -> str:
    """The selection table of the run with `selection:` added, as the report draws it."""
    if figures.selection is None:
        return "(not measured: the figures were written with `--no-selection`)"
    header, *rows = figures.selection
    return _join([
        f"The same run with `selection: [{', '.join(SELECTION)}]` ({figures.selection_calls} more model "
        f"calls, all USC; `{COMMAND}` runs it after the timed run, in the same run folder) picks one answer "
        "per question and source (`report.md`, section "
        "\"Picking one answer\"; the accuracy of the pick, its difference to a uniformly drawn candidate "
        "and to A2C):",
        "",
        _markdown(header, rows),
    ])


def readme_block(figures: Figures) -> str:
    """The README's quickstart paragraph and its abridged table, laid out as `a2c run` prints it."""
    from a2c.qa.headline import aligned

    header, rows = _abridged(figures)
    return _join([
        f"{duration(figures.wall_seconds)} from scratch on {figures.machine.cpu} ({figures.machine.cores} "
        f"cores; {figures.date}): {figures.model_calls} model calls, {_failed(figures)}. "
        f"`{COMMAND}` reruns it and rewrites these figures; on another kind of CPU some cells may differ "
        "(see [the quickstart page](docs/getting-started/quickstart.md)). Each stage prints a line and "
        "each generate call a bar that moves every decoding step. A rerun reuses every finished stage. It "
        "ends with the before → after table (abridged: report.md has every column; accuracy by TruthfulQA's "
        "protocol, "
        "consistency as mean Cons_sem; in brackets the 95% interval of after − before, paired over "
        "questions; ↑/↓ only where it excludes 0; the don't-know share of choices is the share of A2C's "
        "choices, the rank replies that named an option, that named \"don't know\"):",
        "",
        "```text",
        aligned(header, rows),
        "```",
    ])


def markers(name: str) -> tuple[str, str]:
    """The start and end comments of a named block."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def replace_block(text: str, name: str, block: str, *, where: str) -> str:
    """`text` with what lies between the markers of `name` replaced by `block` (the markers kept, one
    blank line inside each); the same block written again gives the same text.

    Args:
        text: the file's text.
        name: the block's name (`quickstart-figures`).
        block: the new content.
        where: the file's name, for the error.

    Returns:
        The new text.
    """
    start, end = markers(name)
    found = [m.start() for m in re.finditer(re.escape(start), text)]
    ends = [m.start() for m in re.finditer(re.escape(end), text)]
    if len(found) != 1 or len(ends) != 1 or ends[0] < found[0]:
        raise FiguresError(f"{where}: needs exactly one {start} followed by one {end} "
                           f"(found {len(found)} start and {len(ends)} end markers)")
    return text[:found[0]] + f"{start}\n\n{block.strip()}\n\n" + text[ends[0]:]


def write_figures(figures: Figures, readme: Path, docs: Path) -> list[Path]:
    """Write every block into its file; returns the files whose text changed."""
    blocks = {readme: [("quickstart-figures", readme_block(figures))],
              docs: [("quickstart-figures", docs_block(figures)),
                     ("quickstart-signal", signal_block(figures)),
                     ("quickstart-selection", selection_block(figures))]}
    changed = []
    for path, named in blocks.items():
        try:
            before = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise FiguresError(f"{path}: not readable ({exc.strerror})") from None
        after = before
        for name, block in named:
            after = replace_block(after, name, block, where=str(path))
        if after != before:
            path.write_text(after, encoding="utf-8")
            changed.append(path)
    return changed


def run_quickstart(config: Path, workdir: Path, *, extra: str | None = None) -> float:
    """`a2c run CONFIG` in `workdir` (so its default request cache is a fresh one there) into
    `workdir/run`; returns its wall time. `extra`: YAML appended to a copy of the config (the copy in
    `workdir`, its `output` dropped: the run folder is given on the command line)."""
    if extra is not None:
        import yaml

        data = yaml.safe_load(config.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise FiguresError(f"{config}: not a mapping of config keys")
        data.pop("output", None)
        data.update(yaml.safe_load(extra))
        config = workdir / config.name
        config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    argv = [sys.executable, "-m", "a2c", "run", str(config.resolve()), "--output", str(workdir / "run"),
            "--no-progress"]
    print("$ " + " ".join(argv), flush=True)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=workdir, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise FiguresError(f"a2c run {config}: exit status {done.returncode} (its output is above)")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join((__doc__ or "").split("\n\n")[1:]))
    parser.add_argument("--config", type=Path, default=ROOT / CONFIG, help=f"default: {CONFIG}")
    parser.add_argument("--readme", type=Path, default=ROOT / README, help=f"default: {README}")
    parser.add_argument("--docs", type=Path, default=ROOT / DOCS, help=f"default: {DOCS}")
    parser.add_argument("--from-run", type=Path, metavar="DIR",
                        help="write the figures of this finished run folder; run nothing")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="run in this new folder and keep it (default: a temporary one, removed after)")
    parser.add_argument("--no-selection", action="store_true",
                        help="skip the untimed second run with the selection baselines")
    parser.add_argument("--print", action="store_true", help="print the blocks; write no file")
    args = parser.parse_args(argv)
    try:
        figures = _from_run(args.from_run) if args.from_run is not None else _fresh(args)
        if args.print:
            print(readme_block(figures), docs_block(figures), signal_block(figures), selection_block(figures),
                  sep="\n\n")
            return 0
        for path in write_figures(figures, args.readme, args.docs):
            print(f"written: {path}")
    except FiguresError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _machine(data: object) -> Machine:
    """A Machine from its provenance record (keys it does not know are left out)."""
    if not isinstance(data, dict):
        raise TypeError("machine: not a mapping")
    known = {field.name for field in dataclasses.fields(Machine)}
    return Machine(**{key: value for key, value in data.items() if key in known})


def _from_run(run_dir: Path) -> Figures:
    """The figures of a finished run folder: wall time, date, machine and model calls from the provenance
    file this script wrote there, else from timings.json (its total seconds and time) and this machine."""
    path = run_dir / PROVENANCE
    if path.exists():
        data = _read_json(path)
        try:
            assert isinstance(data, dict)
            return read_figures(run_dir, wall_seconds=float(data["wall_seconds"]), date=str(data["date"]),
                                machine=_machine(data["machine"]), calls=int(data["model_calls"]))
        except (AssertionError, KeyError, TypeError, ValueError):
            raise FiguresError(f"{path}: not a provenance file of this script (wall_seconds, date, machine, "
                               "model_calls)") from None
    calls, seconds, _ = model_calls(run_dir)
    stamp = dt.date.fromtimestamp((run_dir / "timings.json").stat().st_mtime).isoformat()
    return read_figures(run_dir, wall_seconds=seconds, date=stamp, machine=this_machine(), calls=calls)


def _fresh(args: argparse.Namespace) -> Figures:
    """Run the config from scratch (then, unless --no-selection, with the selection baselines added) and
    read its figures."""
    if args.keep is not None:
        if args.keep.exists() and any(args.keep.iterdir()):
            raise FiguresError(f"--keep {args.keep}: not empty (a run from scratch needs a new folder)")
        args.keep.mkdir(parents=True, exist_ok=True)
        workdir = args.keep.resolve()
    else:
        workdir = Path(tempfile.mkdtemp(prefix="a2c-quickstart-figures-"))
    try:
        machine, date = this_machine(), dt.date.today().isoformat()
        seconds = run_quickstart(args.config, workdir)
        figures = read_figures(workdir / "run", wall_seconds=seconds, date=date, machine=machine)
        if not args.no_selection:
            run_quickstart(args.config, workdir, extra=f"selection: [{', '.join(SELECTION)}]")
            with_selection = read_figures(workdir / "run", wall_seconds=seconds, date=date, machine=machine,
                                          calls=figures.model_calls)
            if with_selection.rows != figures.rows:
                raise FiguresError("the before → after table changed when selection was added, so the "
                                   "figures are left unwritten (--keep DIR keeps the run to look at)")
            figures = dataclasses.replace(figures, selection=with_selection.selection)
        (workdir / "run" / PROVENANCE).write_text(json.dumps({
            "wall_seconds": seconds, "date": date, "machine": dataclasses.asdict(machine),
            "model_calls": figures.model_calls}, indent=1) + "\n", encoding="utf-8")
        return figures
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
