"""`a2c probe --questions FILE`: many questions in batched passes (the same loaders as `dataset: file`),
`--json` for programs, and the usage errors; on the scripted backend, in milliseconds."""

from __future__ import annotations

import json

import pytest

from a2c.cli import main
from a2c.llm.scripted import ScriptedBackend

SCRIPT = "scripted:1|2|Paris|Rome\nMadrid|Which one?"
ARGS = ["--backend", "scripted", "--model", SCRIPT, "--judge", "exact", "--no-cache"]


def test_many_questions_go_through_one_batched_pass_and_into_json(tmp_path, monkeypatch, capsys):
    questions = tmp_path / "mine.csv"
    questions.write_text("qid,prompt\neiffel,Where is the Eiffel Tower?\nspider,How many legs does a spider "
                         "have?\nsky,Why is the sky blue?\n", encoding="utf-8")
    calls: list[int] = []
    original = ScriptedBackend.run

    def counting(self, jobs, emit):
        calls.append(len(jobs))
        return original(self, jobs, emit)

    monkeypatch.setattr(ScriptedBackend, "run", counting)
    out_json = tmp_path / "out" / "probe.json"
    code = main(["probe", "--questions", str(questions), "--column", "question=prompt", "--column", "id=qid",
                 "--json", str(out_json), *ARGS])
    out = capsys.readouterr().out
    assert code == 0
    # one generate call per step for all three questions, not one set of calls per question
    batched, calls[:] = list(calls), []
    assert main(["probe", "Where is the Eiffel Tower?", *ARGS]) == 0
    capsys.readouterr()
    assert len(batched) == len(calls) and sum(batched) > 2 * sum(calls)
    assert out.count("A2C answer:") == 3 and "question: Why is the sky blue?  [sky]" in out
    payload = json.loads(out_json.read_text())
    assert payload["judge"] == "exact" and payload["temperatures"] == [0.25, 0.5, 0.75, 1.0]
    assert [q["id"] for q in payload["questions"]] == ["eiffel", "spider", "sky"]
    first = payload["questions"][0]
    assert set(first["sets"]) == {"paraphrase", "temperature"}
    for found in first["sets"].values():
        n = len(found["answers"])
        assert len(found["matrix"]) == n and all(len(row) == n for row in found["matrix"])
        assert len(found["labels"]) == len(found["asked"]) == n
        assert found["cons_sem"] is None or 0.0 <= found["cons_sem"] <= 1.0
        assert found["entropy"] is None or found["entropy"] >= 0.0
    assert {"source", "slot", "reply", "option", "method", "text"} <= set(first["choices"][0])
    assert "answer" in first and first["paraphrases_failed"] == len(first["failed_paraphrases"])
    for failed in first["failed_paraphrases"]:
        assert set(failed) == {"technique", "text", "problem"} and failed["problem"]


def test_the_single_question_json_matches_the_batched_one(tmp_path, capsys):
    questions = tmp_path / "one.jsonl"
    questions.write_text('{"question": "Where is the Eiffel Tower?"}\n', encoding="utf-8")
    assert main(["probe", "--questions", str(questions), "--json", str(tmp_path / "a.json"), *ARGS]) == 0
    assert main(["probe", "Where is the Eiffel Tower?", "--json", str(tmp_path / "b.json"), *ARGS]) == 0
    capsys.readouterr()
    batched = json.loads((tmp_path / "a.json").read_text())["questions"][0]
    single = json.loads((tmp_path / "b.json").read_text())["questions"][0]
    assert batched["id"] == "one-0" and single["id"] == "q0"
    assert {k: v for k, v in batched.items() if k != "id"} == {k: v for k, v in single.items() if k != "id"}


def test_a_long_file_goes_in_blocks_with_the_same_output(tmp_path, monkeypatch, capsys):
    import a2c.cli.probe as probe

    questions = tmp_path / "five.jsonl"
    questions.write_text("".join(json.dumps({"id": f"q{k}", "question": q}) + "\n" for k, q in enumerate(
        ["Where is the Eiffel Tower?", "How many legs does a spider have?", "Why is the sky blue?",
         "What is the capital of Spain?", "Who wrote Hamlet?"])), encoding="utf-8")
    outputs = {}
    for block in (256, 2):
        monkeypatch.setattr(probe, "PROBE_BLOCK", block)
        assert main(["probe", "--questions", str(questions), "--json", str(tmp_path / f"{block}.json"),
                     *ARGS]) == 0
        outputs[block] = capsys.readouterr()
    # the blocks of 2 say where they are on stderr; stdout and the JSON are the same bytes
    assert "questions 5-5 of 5: [1/" in outputs[2].err and "questions" not in outputs[256].err
    assert outputs[2].out.replace(str(tmp_path / "2.json"), "X") == \
        outputs[256].out.replace(str(tmp_path / "256.json"), "X")
    assert (tmp_path / "2.json").read_bytes() == (tmp_path / "256.json").read_bytes()
    assert [q["id"] for q in json.loads((tmp_path / "2.json").read_text())["questions"]] == \
        [f"q{k}" for k in range(5)]


@pytest.mark.parametrize(("argv", "message"), [
    (["probe", *ARGS], "no question: give one"),
    (["probe", "Why?", "--questions", "q.jsonl", *ARGS], "not both"),
    (["probe", "--questions", "q.jsonl", "--column", "prompt", *ARGS], "expected FIELD=NAME"),
    (["probe", "--questions", "q.jsonl", "--column", "answer=x", *ARGS], "answer: not a field"),
    (["probe", "--questions", "q.jsonl", "--column", "question=prompt", *ARGS],
     "q.jsonl: no column 'prompt'; the file has 'question'\nhint: name the file's column with --column "
     "question=NAME"),
    (["probe", "--questions", "bad.jsonl", *ARGS], "bad.jsonl:2: empty question"),
])
def test_usage_errors_are_one_line(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text('{"question": "Why?"}\n', encoding="utf-8")
    (tmp_path / "bad.jsonl").write_text('{"question": "Why?"}\n{"question": ""}\n', encoding="utf-8")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_selection_methods_pick_per_source_in_the_output_and_the_json(tmp_path, capsys):
    out_json = tmp_path / "probe.json"
    code = main(["probe", "Where is the Eiffel Tower?", *ARGS, "--selection", "usc", "--selection", "medoid",
                 "--selection", "a2c", "--json", str(out_json)])
    out = capsys.readouterr().out
    assert code == 0 and "Selection (one answer per source):" in out
    question = json.loads(out_json.read_text())["questions"][0]
    picks = question["selections"]
    assert list(picks) == ["usc", "medoid", "a2c"]
    for method, per_source in picks.items():
        assert set(per_source) == {"paraphrase", "temperature"}
        for source, pick in per_source.items():
            answers = question["sets"][source]["answers"]
            assert set(pick) == {"text", "candidate", "dont_know", "calls", "reply", "parse"}
            if pick["candidate"] is not None:
                assert pick["text"] == answers[pick["candidate"]]
            if method == "usc":  # one prompt per source, its reply and how it was read
                assert pick["calls"] == 1 and pick["reply"] is not None and pick["parse"] is not None
            if method == "medoid":  # under --judge: exact
                assert pick["calls"] == 0 and pick["reply"] is None
                matrix = question["sets"][source]["matrix"]
                columns = zip(*matrix, strict=True)
                totals = [sum(row) + sum(col) for row, col in zip(matrix, columns, strict=True)]
                assert pick["candidate"] == totals.index(max(totals))
    assert "  usc               paraphrase   → " in out
    # without --selection: no picks, the rest as before
    assert main(["probe", "Where is the Eiffel Tower?", *ARGS, "--json", str(out_json)]) == 0
    assert json.loads(out_json.read_text())["questions"][0]["selections"] == {}


@pytest.mark.parametrize(("name", "message"), [
    ("medoit", "unknown selection method 'medoit'. Did you mean 'medoid'?"),
    ("random", "selection method 'random' picks no answer"),
])
def test_a_bad_selection_is_one_line(capsys, name, message):
    assert main(["probe", "Why?", *ARGS, "--selection", name]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_source_without_answers_prints_no_empty_matrix(capsys):
    """Every paraphrase failed its checks: the probe says so instead of printing a matrix header alone."""
    from a2c.cli.probe import ProbeResult, SetResult, _print

    temperature = SetResult(["t1", "t2"], ["Q?", "Q?"], ["Paris.", "Paris."], [[1.0, 1.0], [1.0, 1.0]],
                            1.0, 0.0, 1)
    failed = [{"technique": "synonyms", "text": "The tower is in Paris.", "problem": "not a question"},
              {"technique": "word order", "text": "", "problem": "empty"}]
    result = ProbeResult("q0", "Q?", 2, failed, {"paraphrase": SetResult([], [], [], [], None, None, 0),
                                                 "temperature": temperature}, [], "Paris.", {})
    _print(result, "embedding")
    out = capsys.readouterr().out
    assert "(2 paraphrases failed their checks and are left out, as in `a2c run`:)" in out
    # what the model wrote, with why it was left out (dimmed on a terminal; captured output is none)
    assert "  ✗ synonyms: The tower is in Paris.  [not a question]\n  ✗ word order: (empty)  [empty]\n" in out
    assert "\x1b[" not in out
    assert "embedding agreement matrix (paraphrases): none, no paraphrase was answered" in out
    assert "embedding agreement matrix (temperatures):\n          t1     t2\n    t1  1.00" in out
