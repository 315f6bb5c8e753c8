"""A finished QA run's Ask-to-Choose picks as chat-format fine-tuning pairs (`a2c export RUN --format sft`).

A pick is exported only where its vote is decisive: the share of the source's parsed rank replies that chose
it is at least `min_vote_share`, which every line records. One pick gives one line per distinct user turn:
the original question, then each of its in-context paraphrases that passed its checks (the questions the
run itself treated as the same question), all with the same chosen answer, so a model tuned on them learns
to answer a question's rewordings alike (consistency fine-tuning). Nothing here checks a pick for truth:
only `only_accurate` keeps just the picks the run scored accurate against its references.

The pick and its share are recomputed from `choices.jsonl` with the vote the run used
(`ask_to_choose.vote`: the plain majority, `a2c.qa.rank.majority_vote`, or the debiased vote over the run's
pooled position prior, as the selection stage takes it), so every run with Ask-to-Choose exports, whatever
selection methods it listed; the accuracy filter reads A2C's rows of `selection_scores.jsonl`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel, ConfigDict

from a2c.common.errors import A2CError
from a2c.common.text import normalize
from a2c.qa.config import ExperimentConfig
from a2c.qa.rank import majority_vote
from a2c.qa.rows import CHOICES, PARAPHRASES, SELECTION_SCORES, SOURCES, ChoiceRow, ParaphraseRow, Source
from a2c.qa.vote import DEFAULT_VOTE, VOTES, PositionPrior, ballots, elect
from a2c.run.open_run import CONFIG_FILE, RunFolderError, open_run
from a2c.run.store import RunFolder

__all__ = ["DEFAULT_MIN_VOTE_SHARE", "EXPORT_FORMATS", "SOURCE_CHOICES", "ExportCounts", "ExportError",
           "ExportSettings", "Message", "Provenance", "SftLine", "check_min_vote_share", "sft_lines",
           "write_lines"]

EXPORT_FORMATS = ("sft",)
SOURCE_CHOICES = ("paraphrase", "temperature", "both")
DEFAULT_MIN_VOTE_SHARE = 0.6
A2C_METHOD = "a2c"  # A2C's rows in selection_scores.jsonl


class ExportError(A2CError):
    """A run or a setting the export cannot use: no Ask-to-Choose, no references for `--only-accurate`."""


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str


class Provenance(BaseModel):
    """Where a line comes from, so a fine-tuning set can be traced back to the run that made it."""

    model_config = ConfigDict(extra="forbid")

    run: str  # the config's name
    config_sha256: str  # of the run folder's config.yaml
    model: str
    backend: str
    source: Source  # whose rank replies voted: in-context paraphrases or temperature samples
    question_id: str
    technique: str | None  # the paraphrase technique of the user turn; None: the original question
    vote: str  # the run's `ask_to_choose.vote`: how the replies elected the pick
    vote_share: float  # the pick's share of the source's parsed rank replies (weighted, when debiased)
    votes: int  # how many parsed rank replies the share is over
    min_vote_share: float  # the threshold the export kept picks at or above
    dont_know: bool  # the pick is the "don't know" option (kept only when asked for)
    only_accurate: str | None  # the similarity the pick was scored accurate by; None: not filtered
    a2c_version: str


class SftLine(BaseModel):
    """One JSONL line: a user turn, the chosen answer, and the provenance under `a2c`."""

    model_config = ConfigDict(extra="forbid")

    messages: list[Message]
    a2c: Provenance


@dataclass(frozen=True)
class ExportSettings:
    """What is exported: the picks of `source` ("both": the more decisive of the two) at or above
    `min_vote_share`; "don't know" picks when `keep_dont_know`; with `only_accurate` (a similarity of the
    run), only picks scored accurate by it."""

    min_vote_share: float = DEFAULT_MIN_VOTE_SHARE
    source: str = "paraphrase"
    keep_dont_know: bool = False
    only_accurate: str | None = None


@dataclass
class ExportCounts:
    """What the export kept and why it left the rest out, filled in as the lines are written."""

    questions: int = 0
    exported: int = 0  # questions that gave lines
    lines: int = 0
    no_pick: int = 0  # no rank reply named an option
    below: int = 0  # vote share under the threshold
    dont_know: int = 0  # "don't know" picks left out
    disagree: int = 0  # source "both": the two sources' decisive picks differ
    inaccurate: int = 0  # `only_accurate`: scored not accurate
    unreferenced: int = 0  # `only_accurate`: the question has no references

    def line(self) -> str:
        """The counts as the one line `a2c export` prints."""
        reasons = {"no parsed pick": self.no_pick, "below the vote share": self.below,
                   "don't know": self.dont_know, "sources disagree": self.disagree,
                   "not accurate": self.inaccurate, "no references": self.unreferenced}
        out = ", ".join(f"{n} {why}" for why, n in reasons.items() if n)
        return (f"{self.lines} lines from {self.exported} of {self.questions} questions"
                + (f" (left out: {out})" if out else ""))


def check_min_vote_share(value: float | str) -> float:
    """`value` (a number, or its text as given on the command line) if it is a share a vote can reach:
    finite, in (0, 1]; else an ExportError.

    Args:
        value: the threshold.

    Returns:
        The threshold as a float.
    """
    try:
        share = float(value)
    except ValueError:
        share = math.nan
    if not math.isfinite(share) or not 0.0 < share <= 1.0:
        raise ExportError(f"--min-vote-share must be a finite number in (0, 1] (a share of A2C's parsed "
                          f"rank replies), got {str(value)!r}")
    return share


@dataclass(frozen=True)
class _Pick:
    text: str | None
    share: float
    votes: int
    dont_know: bool


def _picks(folder: RunFolder, vote: str = DEFAULT_VOTE) -> dict[tuple[str, Source], _Pick]:
    """A2C's pick per question and source, as the selection stage takes it: `vote` over the parsed rank
    replies (the plain majority, ties: the first chosen; or the debiased vote with the run's pooled prior),
    "don't know" when a reply of that text took the last option."""
    chosen: dict[tuple[str, Source], list[tuple[str, bool]]] = {}
    rows: dict[tuple[str, Source], list[ChoiceRow]] = {}
    read: list[ChoiceRow] = []  # in file order, for the run's pooled prior
    for row in folder.iter_rows(CHOICES):
        read.append(row)
        replies = chosen.setdefault((row.id, row.source), [])
        rows.setdefault((row.id, row.source), []).append(row)
        if row.text is not None:
            replies.append((row.text, row.dont_know))
    prior = PositionPrior.of_rows(read) if VOTES.get(vote).uses_prior else None
    picks = {}
    for key, replies in chosen.items():
        if vote == DEFAULT_VOTE:
            text, share = majority_vote([t for t, _ in replies])
        else:
            text, share = elect(vote, ballots(rows[key]), prior)
        dont_know = text is not None and any(d and normalize(t) == normalize(text) for t, d in replies)
        picks[key] = _Pick(text, share or 0.0, len(replies), dont_know)
    return picks


def _accurate(folder: RunFolder, similarity: str, where: str) -> dict[tuple[str, Source], bool | None]:
    """Per question and source, whether A2C's pick is accurate under `similarity` (None: no references)."""
    if not folder.exists(SELECTION_SCORES.name):
        raise ExportError(f"{folder.where(SELECTION_SCORES.name)}: missing, so no pick has an accuracy",
                          hint=f"rescore the run: a2c report {where}")
    scores: dict[tuple[str, Source], bool | None] = {}
    for row in folder.iter_rows(SELECTION_SCORES):
        if row.method == A2C_METHOD:
            accuracy = row.accuracy.get(similarity) if row.referenced else None
            scores[(row.id, row.source)] = None if accuracy is None else accuracy.acc >= 0.5
    if not scores:
        raise ExportError(f"{folder.where(SELECTION_SCORES.name)}: holds no scores of A2C's picks (the run's "
                          "`selection` does not list a2c)", hint="add a2c to `selection` and rerun the run")
    if all(value is None for value in scores.values()):
        raise ExportError(f"--only-accurate: the run {where} has no references, so no pick was scored "
                          "accurate", hint="export without --only-accurate, or run on questions with "
                          "correct and incorrect answers")
    return scores


def _user_turns(row: ParaphraseRow) -> list[tuple[str, str | None]]:
    """(text, technique) of the question and of each of its passed paraphrases, one per distinct text."""
    turns: list[tuple[str, str | None]] = [(row.question, None)]
    seen = {normalize(row.question)}
    for item in row.paraphrases:
        if item.ok and item.text.strip() and normalize(item.text) not in seen:
            seen.add(normalize(item.text))
            turns.append((item.text, item.technique))
    return turns


def _config(run_dir: Path) -> tuple[RunFolder, ExperimentConfig]:
    run = open_run(run_dir, data=False)  # a missing, empty or unfinished folder: one line naming it
    if not isinstance(run.config, ExperimentConfig):
        raise ExportError(f"{run_dir}: a {run.task.name} run; `a2c export` exports QA runs' A2C picks")
    if not run.config.ask_to_choose.enabled:
        raise ExportError(f"{run_dir}: the run has no Ask-to-Choose picks (ask_to_choose.enabled is false)",
                          hint="set ask_to_choose.enabled: true and rerun it")
    for file in (PARAPHRASES, CHOICES):
        if not run.folder.exists(file.name):
            hint = f"finish it: a2c run {run.folder.where(CONFIG_FILE)} --output {run_dir}"
            raise RunFolderError(f"{run.folder.where(file.name)}: missing; the run folder is incomplete",
                                 hint=hint)
    return run.folder, run.config


def sft_lines(run_dir: Path, settings: ExportSettings, counts: ExportCounts | None = None, *, version: str
              ) -> Iterator[SftLine]:
    """The export's lines, a question at a time in the run's order; `counts` is filled in as they go.

    Args:
        run_dir: a finished QA run folder with Ask-to-Choose.
        settings: the threshold, source and filters.
        counts: where to count what was kept and left out (None: not counted).
        version: the a2c version each line records (the facade's `a2c.__version__`; a wing does not
            import the facade).

    Returns:
        The lines; a run or setting the export cannot use is an ExportError (or RunFolderError) before any.
    """
    check_min_vote_share(settings.min_vote_share)
    if settings.source not in SOURCE_CHOICES:
        raise ExportError(f"--source must be one of {', '.join(SOURCE_CHOICES)}, got {settings.source!r}")
    folder, config = _config(run_dir)
    similarities = config.accuracy.columns
    if settings.only_accurate is not None and settings.only_accurate not in similarities:
        raise ExportError(f"--only-accurate {settings.only_accurate}: not a similarity of the run {run_dir} "
                          f"(it scored {', '.join(similarities) or 'none'})")
    accurate = None if settings.only_accurate is None else \
        _accurate(folder, settings.only_accurate, str(run_dir))
    return _lines(folder, config, settings, accurate, counts if counts is not None else ExportCounts(),
                  version)


def _lines(folder: RunFolder, config: ExperimentConfig, settings: ExportSettings,
           accurate: dict[tuple[str, Source], bool | None] | None, counts: ExportCounts, version: str
           ) -> Iterator[SftLine]:
    picks = _picks(folder, config.ask_to_choose.vote)
    digest = folder.digest(CONFIG_FILE) or ""
    sources: tuple[Source, ...] = SOURCES if settings.source == "both" else \
        tuple(s for s in SOURCES if s == settings.source)
    for row in folder.iter_rows(PARAPHRASES):
        counts.questions += 1
        found = [(s, picks[(row.id, s)]) for s in sources if (row.id, s) in picks]
        parsed = [(s, p) for s, p in found if p.text is not None]
        decisive = [(s, p) for s, p in parsed if p.share >= settings.min_vote_share]
        wanted = [(s, p) for s, p in decisive if settings.keep_dont_know or not p.dont_know]
        if not parsed:
            counts.no_pick += 1
            continue
        if not decisive:
            counts.below += 1
            continue
        if not wanted:
            counts.dont_know += 1
            continue
        if len({normalize(p.text or "") for _, p in wanted}) > 1:
            counts.disagree += 1
            continue
        source, pick = max(wanted, key=lambda sp: sp[1].share)  # the first (paraphrase) on a tie
        if accurate is not None:
            verdict = accurate.get((row.id, source))
            if verdict is None:
                counts.unreferenced += 1
                continue
            if not verdict:
                counts.inaccurate += 1
                continue
        counts.exported += 1
        for text, technique in _user_turns(row):
            counts.lines += 1
            yield SftLine(
                messages=[Message(role="user", content=text),
                          Message(role="assistant", content=pick.text or "")],
                a2c=Provenance(run=config.name, config_sha256=digest, model=config.generator.model,
                               backend=config.generator.backend, source=source, question_id=row.id,
                               technique=technique, vote=config.ask_to_choose.vote,
                               vote_share=pick.share, votes=pick.votes,
                               min_vote_share=settings.min_vote_share, dont_know=pick.dont_know,
                               only_accurate=settings.only_accurate, a2c_version=version))


def _dump(lines: Iterable[SftLine], handle: BinaryIO) -> None:
    for line in lines:
        handle.write((line.model_dump_json() + "\n").encode("utf-8"))


def write_lines(lines: Iterable[SftLine], out: Path | BinaryIO) -> None:
    """Write the lines as JSONL to a file (a temp file renamed into place when all are written, so an
    interrupted export leaves no half file and an earlier file as it was) or to an open handle.

    Args:
        lines: what `sft_lines` gives.
        out: the file to replace, or a binary handle (stdout's buffer).
    """
    if isinstance(out, Path):
        with RunFolder(out.parent).streams(out.name) as (handle,):
            _dump(lines, handle)
    else:
        _dump(lines, out)

