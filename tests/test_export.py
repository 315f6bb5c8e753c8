"""`a2c export RUN --format sft` on real scripted runs: every line fits the documented schema, only decisive
picks appear (recomputed by hand from choices.jsonl), the provenance is the run's, the user turns are the
run's own passed paraphrases, `--only-accurate` keeps only the picks scored accurate and is refused on a
run without references, bad input is one error line (exit 2), and an interrupted export leaves no file."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Literal

import pytest
import yaml
from pydantic import BaseModel, ConfigDict

import a2c
from a2c.cli import main
from a2c.common.text import normalize
from a2c.qa.rows import CHOICES, PARAPHRASES, SELECTION_SCORES, SELECTIONS
from a2c.run.store import RunFolder
from tests.view_runs import qa_run

# the scripted model answers "Which one?" a lot: right for a, wrong for b, no references for c
OWN = [
    {"id": "a", "text": "Which city is the capital of Italy?", "right": "Which one?", "wrong": "Paris; Rome"},
    {"id": "b", "text": "Which city is the capital of France?", "right": "Paris",
     "wrong": "Which one?; Rome"},
    {"id": "c", "text": "How many legs does a spider have?"},
    {"id": "d", "text": "Which planet is the largest?", "right": "Which one?", "wrong": "Paris"},
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Turn(_Strict):
    role: Literal["user", "assistant"]
    content: str


class Provenance(_Strict):
    run: str
    config_sha256: str
    model: str
    backend: str
    source: Literal["paraphrase", "temperature"]
    question_id: str
    technique: str | None
    vote: Literal["plain", "debiased"]
    vote_share: float
    votes: int
    min_vote_share: float
    dont_know: bool
    only_accurate: str | None
    a2c_version: str


class Line(_Strict):
    """The line as docs/how-to/export.md documents it, written here independently of a2c's model."""

    messages: list[Turn]
    a2c: Provenance


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qa_run(tmp_path_factory.mktemp("export"), limit=12)


def _own_run(root: Path, columns: dict[str, str]) -> Path:
    data = root / "questions.jsonl"
    data.write_text("".join(json.dumps(q) + "\n" for q in OWN), encoding="utf-8")
    return qa_run(root, dataset={"name": "file", "path": str(data), "columns": columns})


@pytest.fixture(scope="module")
def referenced_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _own_run(tmp_path_factory.mktemp("own"), {"question": "text", "correct": "right",
                                                     "incorrect": "wrong"})


@pytest.fixture(scope="module")
def bare_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _own_run(tmp_path_factory.mktemp("bare"), {"question": "text"})


def _export(run: Path, out: Path, *flags: str) -> list[Line]:
    assert main(["export", str(run), "--format", "sft", "--out", str(out), *flags]) == 0
    return [Line.model_validate(json.loads(text)) for text in out.read_text(encoding="utf-8").splitlines()]


def _votes(run: Path) -> dict[tuple[str, str], tuple[str | None, float, bool]]:
    """(id, source) → the majority text, its share of the parsed rank replies and whether it is "don't know",
    counted here from choices.jsonl."""
    replies: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for c in RunFolder(run).read_rows(CHOICES):
        replies.setdefault((c.id, c.source), [])
        if c.option is not None:
            replies[(c.id, c.source)].append((c.text or "", c.option == len(c.options)))
    out: dict[tuple[str, str], tuple[str | None, float, bool]] = {}
    for key, got in replies.items():
        if not got:
            out[key] = (None, 0.0, False)
            continue
        counts = Counter(normalize(t) for t, _ in got)
        top = max(counts.values())
        text = next(t for t, _ in got if counts[normalize(t)] == top)
        out[key] = (text, top / len(got), any(d for t, d in got if normalize(t) == normalize(text)))
    return out


def test_every_line_fits_the_schema_and_carries_the_runs_provenance(run, tmp_path):
    lines = _export(run, tmp_path / "sft.jsonl")
    assert lines
    config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    digest = hashlib.sha256((run / "config.yaml").read_bytes()).hexdigest()
    for line in lines:
        assert [t.role for t in line.messages] == ["user", "assistant"]
        assert line.messages[0].content.strip() and line.messages[1].content.strip()
        p = line.a2c
        assert (p.run, p.config_sha256, p.model, p.backend) == (config["name"], digest,
                                                                config["generator"]["model"], "scripted")
        assert (p.source, p.min_vote_share, p.only_accurate, p.a2c_version) == ("paraphrase", 0.6, None,
                                                                               a2c.__version__)
        assert not p.dont_know


@pytest.mark.parametrize("source", ["paraphrase", "temperature"])
def test_only_decisive_picks_appear_with_their_threshold(run, tmp_path, source):
    votes = _votes(run)
    kept = {}
    for threshold in ("0.5", "0.75", "1.0"):
        lines = _export(run, tmp_path / f"{threshold}.jsonl", "--min-vote-share", threshold,
                        "--source", source)
        expected = {q for (q, s), (text, share, dont_know) in votes.items()
                    if s == source and text is not None and share >= float(threshold) and not dont_know}
        assert {line.a2c.question_id for line in lines} == expected
        for line in lines:
            text, share, _ = votes[(line.a2c.question_id, source)]
            assert line.a2c.min_vote_share == float(threshold) and line.a2c.source == source
            assert line.a2c.vote_share == pytest.approx(share) and line.a2c.vote_share >= float(threshold)
            assert line.messages[1].content == text
        kept[threshold] = expected
    if source == "temperature":  # the paraphrase source of this run votes unanimously wherever it picks
        assert kept["0.5"] >= kept["0.75"] >= kept["1.0"] and kept["0.5"] > kept["1.0"], \
            "picks must lie on both sides of a threshold"


def test_user_turns_are_the_question_and_its_passed_paraphrases(run, tmp_path):
    lines = _export(run, tmp_path / "sft.jsonl", "--min-vote-share", "0.5")
    rows = {r.id: r for r in RunFolder(run).read_rows(PARAPHRASES)}
    by_question: dict[str, list[Line]] = {}
    for line in lines:
        by_question.setdefault(line.a2c.question_id, []).append(line)
    failed_texts = 0
    for question, got in by_question.items():
        row = rows[question]
        expected = [(row.question, None)]
        for item in row.paraphrases:
            if item.ok and all(normalize(item.text) != normalize(t) for t, _ in expected):
                expected.append((item.text, item.technique))
        failed_texts += sum(not item.ok for item in row.paraphrases)
        assert [(line.messages[0].content, line.a2c.technique) for line in got] == expected
        assert len({line.messages[1].content for line in got}) == 1  # one chosen answer for every wording
    assert any(len(got) > 1 for got in by_question.values()) and failed_texts  # paraphrases, some failed


def test_dont_know_picks_are_dropped_unless_asked_for(run, tmp_path):
    votes = _votes(run)
    idk = {q for (q, s), (text, share, dont_know) in votes.items()
           if s == "paraphrase" and dont_know and share >= 0.6}
    assert idk, "the run must hold a decisive don't-know pick"
    dropped = _export(run, tmp_path / "drop.jsonl")
    kept = _export(run, tmp_path / "keep.jsonl", "--keep-dont-know")
    assert not idk & {line.a2c.question_id for line in dropped}
    kept_idk = [line for line in kept if line.a2c.question_id in idk]
    assert kept_idk and all(line.a2c.dont_know for line in kept_idk)
    idk_text = yaml.safe_load((run / "config.yaml").read_text())["ask_to_choose"]["idk_text"]
    assert {line.messages[1].content for line in kept_idk} == {idk_text}
    assert len(kept) > len(dropped)


def test_both_sources_take_the_more_decisive_pick_and_leave_out_disagreements(run, tmp_path, capsys):
    votes = _votes(run)
    lines = _export(run, tmp_path / "both.jsonl", "--source", "both", "--min-vote-share", "0.5")
    assert "sources disagree" in capsys.readouterr().err  # this run has such a question
    for line in lines:
        q = line.a2c.question_id
        decisive = {s: votes[(q, s)] for s in ("paraphrase", "temperature")
                    if votes[(q, s)][0] is not None and votes[(q, s)][1] >= 0.5 and not votes[(q, s)][2]}
        assert len({normalize(text or "") for text, _, _ in decisive.values()}) == 1
        assert line.a2c.vote_share == pytest.approx(max(share for _, share, _ in decisive.values()))


def test_stdout_gets_the_same_lines_and_the_counts_go_to_stderr(run, tmp_path, capsysbinary):
    assert main(["export", str(run), "--out", str(tmp_path / "sft.jsonl")]) == 0
    capsysbinary.readouterr()
    assert main(["export", str(run)]) == 0
    captured = capsysbinary.readouterr()
    assert captured.out == (tmp_path / "sft.jsonl").read_bytes()
    assert captured.err.decode().startswith("a2c export: ") and len(captured.err.splitlines()) == 1


def test_only_accurate_keeps_the_picks_scored_accurate(referenced_run, tmp_path, capsys):
    scores = {(r.id, r.source): r for r in RunFolder(referenced_run).read_rows(SELECTION_SCORES)
              if r.method == "a2c"}
    everything = _export(referenced_run, tmp_path / "all.jsonl", "--source", "temperature")
    accurate = _export(referenced_run, tmp_path / "acc.jsonl", "--source", "temperature",
                       "--only-accurate", "rouge1")
    assert "no references" in capsys.readouterr().err  # question c is left out: it has none
    assert accurate and len(accurate) < len(everything)
    for line in accurate:
        score = scores[(line.a2c.question_id, "temperature")].accuracy["rouge1"]
        assert score is not None and score.acc == 1.0 and line.a2c.only_accurate == "rouge1"
    left_out = {line.a2c.question_id for line in everything} - {line.a2c.question_id for line in accurate}
    assert "c" in left_out and any(scores[(q, "temperature")].accuracy.get("rouge1") for q in left_out)


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("a2c: error: "), err
    return err[0]


def test_only_accurate_is_refused_without_references_or_with_another_similarity(bare_run, run, tmp_path,
                                                                                capsys):
    out = tmp_path / "sft.jsonl"
    assert main(["export", str(bare_run), "--only-accurate", "rouge1", "--out", str(out)]) == 2
    assert "has no references" in capsys.readouterr().err and not out.exists()
    assert main(["export", str(run), "--only-accurate", "bleu", "--out", str(out)]) == 2
    assert "not a similarity of the run" in _one_error_line(capsys) and not out.exists()


@pytest.mark.parametrize("share", ["1.5", "nan", "inf", "0", "-0.2", "most"])
def test_a_bad_threshold_is_one_line_and_exit_2(run, tmp_path, capsys, share):
    assert main(["export", str(run), "--min-vote-share", share, "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "--min-vote-share must be a finite number in (0, 1]" in _one_error_line(capsys)
    assert not (tmp_path / "x.jsonl").exists()


def test_a_missing_or_unfinished_run_folder_is_named_in_one_line(run, tmp_path, capsys):
    missing = tmp_path / "no-such-run"
    assert main(["export", str(missing)]) == 2
    assert str(missing) in _one_error_line(capsys)
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run, unfinished)
    (unfinished / "choices.jsonl").unlink()
    assert main(["export", str(unfinished)]) == 2
    assert str(unfinished / "choices.jsonl") in capsys.readouterr().err.splitlines()[0]
    (unfinished / "summary.json").unlink()
    assert main(["export", str(unfinished)]) == 2
    assert "has not finished" in capsys.readouterr().err.splitlines()[0]


def test_an_interrupted_export_leaves_no_partial_file(run, tmp_path, monkeypatch, capsys):
    import a2c.qa.export as export

    turns = export._user_turns
    calls = 0

    def interrupted(row):
        nonlocal calls
        calls += 1
        if calls == 3:  # two questions' lines are written by then
            raise KeyboardInterrupt
        return turns(row)

    monkeypatch.setattr(export, "_user_turns", interrupted)
    out = tmp_path / "sft.jsonl"
    assert main(["export", str(run), "--out", str(out)]) == 130
    assert calls == 3 and not out.exists() and list(tmp_path.iterdir()) == []
    out.write_text("an earlier export\n")
    calls = 0
    assert main(["export", str(run), "--out", str(out)]) == 130
    assert out.read_text() == "an earlier export\n" and list(tmp_path.iterdir()) == [out]


def test_the_commands_choices_are_the_exports():
    import a2c.cli.export as cli
    import a2c.qa.export as export

    assert (cli.EXPORT_FORMATS, cli.SOURCE_CHOICES, cli.DEFAULT_MIN_VOTE_SHARE) == \
        (export.EXPORT_FORMATS, export.SOURCE_CHOICES, export.DEFAULT_MIN_VOTE_SHARE)


@pytest.fixture(scope="module")
def debiased_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qa_run(tmp_path_factory.mktemp("debiased"), limit=12, ask_to_choose={"vote": "debiased"})


@pytest.mark.parametrize("source", ["paraphrase", "temperature"])
def test_a_debiased_run_exports_the_picks_its_selection_stage_made(debiased_run, run, tmp_path, source):
    """The export elects with the run's vote: its answers are A2C's rows of selections.jsonl, which differ
    from the plain majority on some question of this run, and every line says which vote it was."""
    picks = {r.id: r.text for r in RunFolder(debiased_run).read_rows(SELECTIONS)
             if r.method == "a2c" and r.source == source and r.text is not None}
    lines = _export(debiased_run, tmp_path / f"{source}.jsonl", "--source", source,
                    "--min-vote-share", "0.01", "--keep-dont-know")
    originals = {line.a2c.question_id: line.messages[1].content
                 for line in lines if line.a2c.technique is None}
    assert originals == picks
    assert {line.a2c.vote for line in lines} == {"debiased"}
    assert {line.a2c.vote for line in _export(run, tmp_path / "plain.jsonl")} == {"plain"}


def test_the_debiased_vote_moves_a_pick_of_the_exported_run(debiased_run):
    """So the test above can tell the two votes apart: some pick differs from the plain majority."""
    plain = _votes(debiased_run)
    moved = [r for r in RunFolder(debiased_run).read_rows(SELECTIONS) if r.method == "a2c"
             and r.text is not None and normalize(r.text) != normalize(plain[(r.id, r.source)][0] or "")]
    assert moved
