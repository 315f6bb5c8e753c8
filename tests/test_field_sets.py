"""The field's question sets (`a2c.qa.data.sets`: TriviaQA, NQ-open, SciQ, CoQA, SQuAD) read from local copies
in each set's real layout: the hub's rows as `datasets` exports them (JSON Lines, parquet) and SQuAD's and
CoQA's original JSON files. Local files stand in for the hub, which a test machine cannot reach; the rows
are our own questions in the hub's field layout. Bad rows fail naming the row and the field; a question's
context (a passage, a story) is shown before it in the answer and rank prompts and a standalone question's
prompts are the templates' own; every experiment config loads and runs end to end from a local file."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from a2c.cli.run import with_dataset_path
from a2c.data.errors import DatasetError
from a2c.llm import GeneratorConfig, build_generator
from a2c.llm.base import GenerationRequest, Message, WrappedGenerator
from a2c.llm.scripted import ScriptedBackend
from a2c.prompting.prompts import load_template
from a2c.qa.data import load_records
from a2c.qa.rank import RankOptions, ask_to_choose, rank_request
from a2c.qa.task import load_data
from a2c.qa.variation import AnswerTask, answer
from a2c.run.config_file import load_config
from a2c.run.pipeline import run_experiment

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"

# ---------------------------------------------------------------- rows in each set's hub layout

STORY = ("Mara kept bees on the roof of the old mill. Every June she sold their honey at the harbour market, "
         "and the money paid for a new boat.")
PASSAGE = ("The Larch Bridge crosses the river Vell at Ormsby. It was opened in 1903 and was designed by the "
           "engineer Edith Carrow, whose first bridge it was.")


def _no_evidence() -> dict[str, dict[str, list[Any]]]:
    """`entity_pages` and `search_results` of an `rc.nocontext` row: the evidence fields, emptied."""
    return {"entity_pages": {"doc_source": [], "filename": [], "title": [], "wiki_context": []},
            "search_results": {"description": [], "filename": [], "rank": [], "title": [], "url": [],
                               "search_context": []}}


def triviaqa_row(qid: str, question: str, value: str, aliases: list[str]) -> dict[str, Any]:
    return {"question": question, "question_id": qid, "question_source": "http://www.example.org/quiz",
            **_no_evidence(),
            "answer": {"aliases": aliases, "normalized_aliases": [a.lower() for a in aliases],
                       "matched_wiki_entity_name": "", "normalized_matched_wiki_entity_name": "",
                       "normalized_value": value.lower(), "type": "WikipediaEntity", "value": value}}


def sciq_row(question: str, correct: str, distractors: tuple[str, str, str], support: str) -> dict[str, Any]:
    return {"question": question, "distractor3": distractors[2], "distractor1": distractors[0],
            "distractor2": distractors[1], "correct_answer": correct, "support": support}


def coqa_row(story: str, turns: list[tuple[str, str]]) -> dict[str, Any]:
    starts = [max(story.find(a), 0) for _, a in turns]
    return {"source": "mctest", "story": story, "questions": [q for q, _ in turns],
            "answers": {"input_text": [a for _, a in turns], "answer_start": starts,
                        "answer_end": [s + len(a) for s, (_, a) in zip(starts, turns, strict=True)]}}


def squad_row(qid: str, question: str, answers: list[str], context: str = PASSAGE) -> dict[str, Any]:
    return {"id": qid, "title": "Larch_Bridge", "context": context, "question": question,
            "answers": {"text": answers, "answer_start": [max(context.find(a), 0) for a in answers]}}


ROWS: dict[str, list[dict[str, Any]]] = {
    "triviaqa": [
        triviaqa_row("qz_101", "Which planet is known as the Red Planet?", "Mars",
                     ["Mars", "Planet Mars", "The Red Planet", "Mars (planet)"]),
        triviaqa_row("qz_102", "What is the chemical symbol for gold?", "Au", ["Au", "AU"]),
    ],
    "nq_open": [
        {"question": "who painted the ceiling of the sistine chapel", "answer": ["Michelangelo"]},
        {"question": "how many strings does a standard violin have", "answer": ["four", "4"]},
    ],
    "sciq": [
        sciq_row("What gas do plants take in from the air to make sugar?", "carbon dioxide",
                 ("oxygen", "nitrogen", "helium"), "Plants take in carbon dioxide and give off oxygen."),
        sciq_row("What is the hardest natural material?", "diamond", ("quartz", "granite", "iron"),
                 "Diamond is the hardest natural material known."),
    ],
    "coqa": [coqa_row(STORY, [("Where did Mara keep her bees?", "on the roof of the old mill"),
                              ("What did the money pay for?", "a new boat")])],
    "squad": [
        squad_row("5a1f0001", "When was the Larch Bridge opened?", ["1903", "1903", "in 1903"]),
        squad_row("5a1f0002", "Who designed the Larch Bridge?",
                  ["Edith Carrow", "the engineer Edith Carrow"]),
    ],
}

# what each set's two questions read as: (id, question, gold answers, context)
EXPECTED: dict[str, list[tuple[str, str, tuple[str, ...], str]]] = {
    "triviaqa": [
        ("qz_101", "Which planet is known as the Red Planet?",
         ("Mars", "Planet Mars", "The Red Planet", "Mars (planet)"), ""),
        ("qz_102", "What is the chemical symbol for gold?", ("Au", "AU"), ""),
    ],
    "nq_open": [
        ("nq_open-0", "who painted the ceiling of the sistine chapel", ("Michelangelo",), ""),
        ("nq_open-1", "how many strings does a standard violin have", ("four", "4"), ""),
    ],
    "sciq": [  # closed-book: the support paragraph is not shown; the distractors are no references
        ("sciq-0", "What gas do plants take in from the air to make sugar?", ("carbon dioxide",), ""),
        ("sciq-1", "What is the hardest natural material?", ("diamond",), ""),
    ],
    "coqa": [  # one record per turn; the second shows the first turn after the story
        ("coqa-0-1", "Where did Mara keep her bees?", ("on the roof of the old mill",), f"Story: {STORY}"),
        ("coqa-0-2", "What did the money pay for?", ("a new boat",),
         f"Story: {STORY}\n\nQ: Where did Mara keep her bees?\nA: on the roof of the old mill"),
    ],
    "squad": [  # the annotators' spans, each distinct text once
        ("5a1f0001", "When was the Larch Bridge opened?", ("1903", "in 1903"), f"Passage: {PASSAGE}"),
        ("5a1f0002", "Who designed the Larch Bridge?", ("Edith Carrow", "the engineer Edith Carrow"),
         f"Passage: {PASSAGE}"),
    ],
}

SETS = tuple(ROWS)


def export(rows: list[dict[str, Any]], path: Path) -> Path:
    """The rows as `datasets` writes them: `.to_json()` (JSON Lines, whatever the suffix), `.to_parquet()`."""
    datasets = pytest.importorskip("datasets")
    table = datasets.Dataset.from_list(rows)
    if path.suffix == ".parquet":
        table.to_parquet(str(path))
    else:
        table.to_json(str(path))
    return path


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    """Rows written by hand, one JSON object a line (so a test can break one)."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _read(records) -> list[tuple[str, str, tuple[str, ...], str]]:
    return [(r.id, r.question, r.correct, r.context) for r in records]


# ---------------------------------------------------------------- the hub layouts, exported


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet"])
@pytest.mark.parametrize("name", SETS)
def test_each_set_reads_its_hub_rows_as_datasets_exports_them(name, suffix, tmp_path):
    path = export(ROWS[name], tmp_path / f"{name}{suffix}")
    records = load_records(name, path)
    assert _read(records) == EXPECTED[name]
    assert all(not r.incorrect for r in records)  # gold answers only, for the gold-answer rules


def test_triviaqa_and_sciq_keep_the_listed_answer_as_the_best_one(tmp_path):
    trivia = load_records("triviaqa", export(ROWS["triviaqa"], tmp_path / "t.jsonl"))
    assert [r.best_answer for r in trivia] == ["Mars", "Au"]
    # value first even when the aliases list it later, each spelling once
    row = triviaqa_row("qz_9", "What is the largest ocean?", "Pacific Ocean", ["Pacific", "Pacific Ocean"])
    [record] = load_records("triviaqa", export([row], tmp_path / "t9.jsonl"))
    assert record.correct == ("Pacific Ocean", "Pacific")
    sciq = load_records("sciq", export(ROWS["sciq"], tmp_path / "s.jsonl"))
    assert [r.best_answer for r in sciq] == ["carbon dioxide", "diamond"]
    assert not any("oxygen" in r.question or "oxygen" in r.context for r in sciq)


def test_coqa_asks_each_turn_with_the_story_and_the_turns_before_it(tmp_path):
    turns = [("Who kept bees?", "Mara"), ("Where?", "on the roof"),
             ("When did she sell the honey?", "in June")]
    records = load_records("coqa", export([coqa_row(STORY, turns), coqa_row("A short second story.", [
        ("Is it short?", "yes")])], tmp_path / "c.jsonl"))
    assert [r.id for r in records] == ["coqa-0-1", "coqa-0-2", "coqa-0-3", "coqa-1-1"]
    third = records[2]
    assert third.question == "When did she sell the honey?" and third.correct == ("in June",)
    assert third.context == f"Story: {STORY}\n\nQ: Who kept bees?\nA: Mara\nQ: Where?\nA: on the roof"
    assert records[3].context == "Story: A short second story."  # a new story starts a new conversation


# ---------------------------------------------------------------- the original JSON files


def squad_original() -> dict[str, Any]:
    """SQuAD's `dev-v1.1.json` layout: articles, their paragraphs, each paragraph's questions."""
    return {"version": "1.1", "data": [
        {"title": "Larch_Bridge", "paragraphs": [
            {"context": PASSAGE, "qas": [
                {"answers": [{"answer_start": 54, "text": "1903"}, {"answer_start": 51, "text": "in 1903"},
                             {"answer_start": 54, "text": "1903"}],
                 "question": "When was the Larch Bridge opened?", "id": "5a1f0001"},
                {"answers": [{"answer_start": 100, "text": "Edith Carrow"}],
                 "question": "Who designed the Larch Bridge?", "id": "5a1f0002"}]}]},
        {"title": "Mill", "paragraphs": [
            {"context": STORY, "qas": [{"answers": [{"answer_start": 0, "text": "Mara"}],
                                        "question": "Who kept bees?", "id": "5a1f0003"}]}]}]}


def coqa_original() -> dict[str, Any]:
    """CoQA's `coqa-dev-v1.0.json` layout: stories with their turns and three more annotators' answers."""
    def turn_answer(turn: int, text: str) -> dict[str, Any]:
        return {"span_start": 0, "span_end": len(text), "span_text": text, "input_text": text,
                "turn_id": turn}

    return {"version": "1.0", "data": [{
        "source": "mctest", "id": "3dr23u6we5exclen4th8uq9rb42tel", "filename": "mc160.test.41",
        "story": STORY, "name": "mc160.test.41",
        "questions": [{"input_text": "Where did Mara keep her bees?", "turn_id": 1},
                      {"input_text": "What did the money pay for?", "turn_id": 2}],
        "answers": [turn_answer(1, "on the roof of the old mill"), turn_answer(2, "a new boat")],
        "additional_answers": {
            "0": [turn_answer(1, "on the roof"), turn_answer(2, "a new boat")],
            "1": [turn_answer(1, "the old mill's roof"), turn_answer(2, "a boat")],
            "2": [turn_answer(1, "on the roof of the old mill"), turn_answer(2, "new boat")]}}]}


def test_squad_reads_its_original_dev_file(tmp_path):
    path = tmp_path / "dev-v1.1.json"
    path.write_text(json.dumps(squad_original()), encoding="utf-8")
    records = load_records("squad", path)
    assert _read(records) == [
        ("5a1f0001", "When was the Larch Bridge opened?", ("1903", "in 1903"), f"Passage: {PASSAGE}"),
        ("5a1f0002", "Who designed the Larch Bridge?", ("Edith Carrow",), f"Passage: {PASSAGE}"),
        ("5a1f0003", "Who kept bees?", ("Mara",), f"Passage: {STORY}"),
    ]


def test_coqa_reads_its_original_dev_file_with_the_other_annotators_as_aliases(tmp_path):
    path = tmp_path / "coqa-dev-v1.0.json"
    path.write_text(json.dumps(coqa_original()), encoding="utf-8")
    records = load_records("coqa", path)
    assert _read(records) == [
        ("3dr23u6we5exclen4th8uq9rb42tel-1", "Where did Mara keep her bees?",
         ("on the roof of the old mill", "on the roof", "the old mill's roof"), f"Story: {STORY}"),
        ("3dr23u6we5exclen4th8uq9rb42tel-2", "What did the money pay for?",
         ("a new boat", "a boat", "new boat"),
         f"Story: {STORY}\n\nQ: Where did Mara keep her bees?\nA: on the roof of the old mill"),
    ]


# ---------------------------------------------------------------- bad input


def _broken(name: str, change) -> list[dict[str, Any]]:
    """The set's rows, the second one changed by `change` (a copy through JSON, so nothing is shared)."""
    rows = json.loads(json.dumps(ROWS[name]))
    change(rows[-1])
    return rows


BAD_ROWS = [
    # (set, how the last row is broken, what the message names after `file:line: `)
    ("triviaqa", lambda r: r["answer"].pop("value"), r"no field 'answer\.value'"),
    ("triviaqa", lambda r: r.pop("question_id"), r"no field 'question_id'"),
    ("triviaqa", lambda r: r["answer"].update(aliases="Au"),
     r"field 'answer\.aliases' holds str 'Au', not a list"),
    ("triviaqa", lambda r: r.update(answer=["Au"]), r"field 'answer' holds list, not an object with 'value'"),
    ("nq_open", lambda r: r.update(answer="four"), r"field 'answer' holds str 'four', not a list of texts"),
    ("nq_open", lambda r: r.update(answer=[4]), r"field answer\[0\] holds int 4, not text"),
    ("nq_open", lambda r: r.update(answer=[]), r"field 'answer' lists no text"),
    ("nq_open", lambda r: r.update(question="  "), r"field 'question' is empty"),
    ("sciq", lambda r: r.pop("correct_answer"), r"no field 'correct_answer'; the row has 'question'"),
    ("sciq", lambda r: r.update(question=7), r"field 'question' holds int 7, not text"),
    ("coqa", lambda r: r.pop("story"), r"no field 'story'"),
    ("coqa", lambda r: r["answers"]["input_text"].pop(), r"2 `questions` but 1 `answers.input_text`"),
    ("coqa", lambda r: r["questions"].append("And then?"), r"3 `questions` but 2 `answers.input_text`"),
    ("coqa", lambda r: r["questions"].__setitem__(1, ""), r"field 'questions' has 1 empty turn"),
    ("coqa", lambda r: r.update(answers=["a", "b"]), r"field 'answers' holds list, not an object"),
    ("squad", lambda r: r["answers"].pop("text"), r"no field 'answers\.text'"),
    ("squad", lambda r: r["answers"].update(text="Edith Carrow"), r"field 'answers\.text' holds str"),
    ("squad", lambda r: r.update(context=None), r"field 'context' holds NoneType None, not text"),
    ("squad", lambda r: r.update(id="5a1f0001"), r"id '5a1f0001' is used twice \(first at .*:1\)"),
]


@pytest.mark.parametrize(("name", "change", "message"), BAD_ROWS,
                         ids=[f"{n}-{m[:30]}" for n, _, m in BAD_ROWS])
def test_a_bad_row_names_its_file_line_and_field(name, change, message, tmp_path):
    path = write_jsonl(_broken(name, change), tmp_path / f"{name}.jsonl")
    line = len(ROWS[name])  # the changed row is the last one
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(path))}:{line}: {message}"):
        load_records(name, path)


def test_a_bad_parquet_row_names_its_row(tmp_path):
    rows = _broken("nq_open", lambda r: r.update(answer=[]))
    path = export(rows, tmp_path / "nq.parquet")
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(path))}:row 2: field 'answer' lists no text"):
        load_records("nq_open", path)


def test_a_duplicate_triviaqa_question_id_names_both_rows(tmp_path):
    row = ROWS["triviaqa"][0]
    path = write_jsonl([row, ROWS["triviaqa"][1], row], tmp_path / "t.jsonl")
    where = re.escape(str(path))
    with pytest.raises(DatasetError, match=rf"^{where}:3: id 'qz_101' is used twice \(first at {where}:1\)"):
        load_records("triviaqa", path)


@pytest.mark.parametrize(("suffix", "content", "message"), [
    (".jsonl", b"", "no rows"), (".json", b"", "no rows"), (".json", b"\n\n", "no rows"),
    (".parquet", b"", "not a readable parquet file"),
])
def test_an_empty_file_is_refused_by_name(suffix, content, message, tmp_path):
    path = tmp_path / f"squad{suffix}"
    path.write_bytes(content)
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(path))}: {message}"):
        load_records("squad", path)


def test_a_line_that_is_not_json_names_its_line(tmp_path):
    path = tmp_path / "nq.jsonl"
    path.write_text(json.dumps(ROWS["nq_open"][0]) + "\n{\"question\": \"x\", \n", encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(path))}:2: not valid JSON"):
        load_records("nq_open", path)


ORIGINAL_ERRORS = [
    ("squad", squad_original, lambda d: d["data"][1].pop("paragraphs"),
     r"data\[1\]: field 'paragraphs' holds NoneType, not a list"),
    ("squad", squad_original, lambda d: d["data"][0]["paragraphs"][0]["qas"][1].pop("question"),
     r"data\[0\]\.paragraphs\[0\]\.qas\[1\]: field 'question' holds NoneType None, not text"),
    ("squad", squad_original, lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"][1].update(text=3),
     r"data\[0\]\.paragraphs\[0\]\.qas\[0\]: field answers\.text\[1\] holds int 3, not text"),
    ("squad", squad_original, lambda d: d["data"][0]["paragraphs"][0]["qas"][1].update(id="5a1f0001"),
     r"data\[0\]\.paragraphs\[0\]\.qas\[1\]: id '5a1f0001' is used twice \(first at .*qas\[0\]\)"),
    ("coqa", coqa_original, lambda d: d["data"][0]["questions"][1].update(turn_id=3),
     r"data\[0\]\.questions\[1\]: turn_id 3, expected 2"),
    ("coqa", coqa_original, lambda d: d["data"][0]["answers"].pop(),
     r"data\[0\]: 2 `questions` but 1 `answers\.input_text`"),
    ("coqa", coqa_original, lambda d: d["data"][0]["additional_answers"]["1"].pop(),
     r"data\[0\]: field 'additional_answers\.1' must list one text per turn \(2\)"),
    ("coqa", coqa_original, lambda d: d.update(data={"story": STORY}),
     r"field 'data' holds dict, not a list"),
]


@pytest.mark.parametrize(("name", "document", "change", "message"), ORIGINAL_ERRORS,
                         ids=[f"{n}-{k}" for k, (n, *_) in enumerate(ORIGINAL_ERRORS)])
def test_a_bad_entry_of_an_original_file_names_where_it_sits(name, document, change, message, tmp_path):
    data = document()
    change(data)
    path = tmp_path / f"{name}-dev.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(path))}: {message}"):
        load_records(name, path)


def test_an_original_layout_is_refused_for_a_set_that_has_none(tmp_path):
    path = tmp_path / "nq.json"
    path.write_text(json.dumps({"version": "1", "data": ROWS["nq_open"]}), encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(path))}: a JSON object with `data`, but "
                                           r"Natural Questions \(open\) has no original JSON layout"):
        load_records("nq_open", path)


@pytest.mark.parametrize("setting", [{"split": "validation"}, {"revision": "main"}])
def test_a_split_or_revision_with_a_local_file_is_refused(setting, tmp_path):
    path = export(ROWS["squad"], tmp_path / "squad.jsonl")
    [key] = setting
    with pytest.raises(DatasetError, match=rf"dataset 'squad': `{key}` applies to the hub's rows only"):
        load_records("squad", path, **setting)
    with pytest.raises(DatasetError, match=rf"`{key}` applies to the hub's rows only"):
        load_config(EXPERIMENTS / "squad.yaml", overrides=[f"dataset.path={path}", f"dataset.{key}=x"])


def test_a_misspelt_set_name_suggests_the_right_one(tmp_path):
    with pytest.raises(Exception, match=r"unknown dataset 'trivia_qa'\. Did you mean 'triviaqa'\?"):
        load_records("trivia_qa", export(ROWS["triviaqa"], tmp_path / "t.jsonl"))


# ---------------------------------------------------------------- the context in the prompts


@dataclass
class Recording(WrappedGenerator):
    """A generator that keeps every generate call's requests."""

    calls: list[list[GenerationRequest]] = field(default_factory=list)

    def generate(self, requests):
        self.calls.append(list(requests))
        return self.inner.generate(requests)


def _scripted(script: str = "scripted:1|2|Edith Carrow") -> Recording:
    return Recording(build_generator(GeneratorConfig(backend="scripted", model=script, cache=None)))


QUESTION = "Who designed the Larch Bridge?"
CONTEXT = f"Passage: {PASSAGE}"


def test_the_long_answer_prompt_shows_the_context_before_the_question():
    generator = _scripted()
    answer(generator, [AnswerTask(QUESTION, context=CONTEXT), AnswerTask(QUESTION, temperature=1.0, seed=3,
                                                                         context=CONTEXT)])
    template = load_template("long_answer").messages(question=QUESTION)
    longs, shorts = generator.calls
    for request in longs:
        *turns, last = request.messages
        assert tuple(turns) == template[:-1]  # the system turn is the template's
        assert last == Message("user", f"{CONTEXT}\n\n{QUESTION}")
    # the short answer is read off the long one: its prompt carries no passage
    assert all(PASSAGE not in m.content for r in shorts for m in r.messages)


def test_a_question_without_context_gets_the_templates_own_messages():
    generator = _scripted()
    answer(generator, [AnswerTask(QUESTION), AnswerTask(QUESTION, context="")])
    expected = load_template("long_answer").messages(question=QUESTION)
    assert [r.messages for r in generator.calls[0]] == [expected, expected]
    options = RankOptions.build(["Edith Carrow", "Mara"])
    plain = rank_request(QUESTION, options, temperature=0.0, top_p=0.9, seed=1)
    assert plain.messages == load_template("rank").messages(question=QUESTION, options=options.render(),
                                                            idk=options.idk_text)


def test_every_rank_prompt_shows_the_context_before_the_question():
    options = RankOptions.build(["Edith Carrow", "the engineer", "1903"])
    template = load_template("rank").messages(question=QUESTION, options=options.render(),
                                              idk=options.idk_text)
    request = rank_request(QUESTION, options, temperature=0.0, top_p=0.9, seed=1, passage=CONTEXT)
    assert request.messages[:-1] == template[:-1]  # the few-shot examples are not given the passage
    assert request.messages[-1] == Message("user", f"{CONTEXT}\n\n{template[-1].content}")

    generator = _scripted()
    other = "What is the hardest natural material?"
    ask_to_choose(generator, [QUESTION, other], [["Edith Carrow", "Carrow"], ["diamond", "quartz"]],
                  [["Edith Carrow", "Edith"], ["diamond", "iron"]], [[0.5, 1.0], [0.5, 1.0]],
                  passages=[CONTEXT, ""])
    *fresh, ranks = generator.calls  # the fresh paraphrases (a failed one retried), then every rank prompt
    assert fresh and all(PASSAGE not in m.content for c in fresh for r in c for m in r.messages)
    with_passage = [r for r in ranks if r.messages[-1].content.startswith(f"{CONTEXT}\n\nQuestion: ")]
    without = [r for r in ranks if PASSAGE not in r.messages[-1].content]
    # per question a slot per default technique (4) and per temperature (2)
    assert len(with_passage) == len(without) == 6 and len(ranks) == 12
    assert all(r.messages[-1].content.startswith("Question: ") for r in without)


def test_a_run_shows_the_passage_in_answer_and_rank_prompts_not_in_paraphrase_ones(tmp_path, monkeypatch):
    """Every prompt a SQuAD run sends, recorded at the scripted backend."""
    seen: list[GenerationRequest] = []
    run = ScriptedBackend.run

    def recording(self, jobs, emit):
        seen.extend(jobs)
        return run(self, jobs, emit)

    monkeypatch.setattr(ScriptedBackend, "run", recording)
    path = export(ROWS["squad"], tmp_path / "squad.jsonl")
    config = load_config(EXPERIMENTS / "squad.yaml", overrides=[
        f"dataset.path={path}", f"output={tmp_path / 'run'}", "judges=[exact]", "selection=[a2c]",
        "variation.temperatures=[0.0, 1.0]", "variation.techniques=[synonyms, word forms]",
        "generator={backend: scripted, model: 'scripted:1|2|1903|Edith Carrow', cache: null}"])
    run_experiment(config, progress=False)
    long_system = load_template("long_answer").messages(question="x")[0]
    rank_system = load_template("rank").messages(question="x", options="x", idk="x")[0]
    longs = [r for r in seen if r.messages and r.messages[0] == long_system]
    ranks = [r for r in seen if r.messages and r.messages[0] == rank_system]
    others = [r for r in seen if r not in longs and r not in ranks]
    assert longs and ranks and others
    assert all(r.messages[-1].content.startswith(f"Passage: {PASSAGE}\n\n") for r in longs + ranks)
    asked = {r.messages[-1].content.removeprefix(f"Passage: {PASSAGE}\n\n") for r in longs}
    assert asked >= {q for _, q, _, _ in EXPECTED["squad"]}  # the temperature source asks the question itself
    assert not any(PASSAGE in m.content for r in others for m in r.messages or ())
    assert not any(PASSAGE in (r.prompt or "") for r in others)


# ---------------------------------------------------------------- the experiment configs

CONFIGS = [("triviaqa.yaml", "triviaqa", "exact_match"), ("nq-open.yaml", "nq_open", "exact_match"),
           ("sciq.yaml", "sciq", "token_f1"), ("coqa.yaml", "coqa", "rouge_l"),
           ("squad.yaml", "squad", "token_f1")]


@pytest.mark.parametrize(("file", "name", "rule"), CONFIGS)
def test_each_config_loads_with_its_set_and_gold_answer_rule(file, name, rule, tmp_path):
    config = load_config(EXPERIMENTS / file)
    assert config.dataset.name == name and config.dataset.path is None  # the hub by default
    assert config.accuracy.rule.name == rule and config.accuracy.similarities == []
    temperatures = config.variation.temperatures
    assert temperatures[0] == 0.0 and set(temperatures[1:]) == {1.0} and len(temperatures) == 11
    # a local copy instead, as `--set dataset.path=...` and `--dataset-path` give it
    path = export(ROWS[name], tmp_path / f"{name}.jsonl")
    local = load_config(EXPERIMENTS / file, overrides=[f"dataset.path={path}"])
    assert _read(load_data(local)) == EXPECTED[name]
    assert _read(load_data(with_dataset_path(config, path))) == EXPECTED[name]


def test_dataset_path_checks_the_file_when_the_config_loads(tmp_path):
    path = write_jsonl(_broken("squad", lambda r: r.pop("question")), tmp_path / "squad.jsonl")
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(path))}:2: no field 'question'"):
        with_dataset_path(load_config(EXPERIMENTS / "squad.yaml"), path)


# ---------------------------------------------------------------- end to end

# replies the scripted model picks among by a hash of each prompt: option numbers for the rank prompts,
# and for the answers some of the sets' gold answers and some wrong ones, so both kinds occur
SCRIPTS = {
    "triviaqa": "scripted:1|2|Mars|Au|Venus|Silver",
    "nq_open": "scripted:1|2|Michelangelo|four|Raphael|six",
    "sciq": "scripted:1|2|carbon dioxide|diamond|oxygen|iron",
    "coqa": "scripted:1|2|on the roof of the old mill|a new boat|in the garden|a car",
}


def _signal(folder: Path) -> list[dict[str, Any]]:
    """The report's signal table: `summary.json`'s rows, checked against `table_signal.csv` and report.md."""
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    with (folder / "table_signal.csv").open(encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert table and "AUROC [95% CI]" in table[0] and "PRR [95% CI]" in table[0]
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Consistency as a signal of correctness" in report
    rows = summary["signal"]
    assert rows and all(r["auroc"] is None or 0.0 <= r["auroc"] <= 1.0 for r in rows)
    assert all(r["undefined"] for r in rows if r["auroc"] is None)  # an undefined AUROC says why
    return rows


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_a_scripted_run_of_two_questions_reports_its_signal_table(name, tmp_path):
    config_file = next(f for f, n, _ in CONFIGS if n == name)
    path = export(ROWS[name], tmp_path / f"{name}.jsonl")
    config = load_config(EXPERIMENTS / config_file, overrides=[
        f"dataset.path={path}", f"output={tmp_path / 'run'}", "judges=[exact, rouge1]",
        f"generator={{backend: scripted, model: '{SCRIPTS[name]}', cache: {tmp_path / 'cache.sqlite'}}}"])
    result = run_experiment(config, progress=False)
    assert sorted(r.id for r in load_data(config)) == sorted(e[0] for e in EXPECTED[name])
    summary = json.loads((result.folder / "summary.json").read_text(encoding="utf-8"))
    assert summary["counts"]["questions_with_references"] == 2
    assert summary["similarities"] == [config.accuracy.rule.name]
    rows = _signal(result.folder)
    assert any(r["auroc"] is not None for r in rows)  # the script's answers are right and wrong


def test_the_embedded_model_answers_two_squad_questions_with_their_passage(tmp_path):
    """Real inference once: SmolLM2 on the transformers backend, as the configs use it, kept small."""
    path = export(ROWS["squad"], tmp_path / "squad.jsonl")
    config = load_config(EXPERIMENTS / "squad.yaml", overrides=[
        f"dataset.path={path}", f"output={tmp_path / 'run'}", "judges=[exact, rouge1]", "selection=[a2c]",
        "variation.temperatures=[0.0, 1.0]", "variation.techniques=[synonyms, word forms]",
        "variation.long_max_tokens=32", "variation.short_max_tokens=12",
        f"generator={{backend: transformers, model: SmolLM2-135M-Instruct, batch_size: 32, "
        f"cache: {tmp_path / 'cache.sqlite'}}}"])
    result = run_experiment(config, progress=False)
    referenced = [r for r in result.metrics if r.referenced and r.n]
    assert referenced and all(set(r.accuracy) == {"token_f1"} for r in referenced)
    generations = [json.loads(line) for line in
                   (result.folder / "generations.jsonl").read_text(encoding="utf-8").splitlines()]
    # Edith Carrow is named in the passage alone: an answer naming her was made with the passage shown
    assert any("Carrow" in g["long"] for g in generations if g["id"] == "5a1f0002")
    rows = _signal(result.folder)
    greedy_and_sampled = [r for r in referenced if r.source == "temperature" and r.phase == "before"]
    right = sum(r.n_accurate or 0 for r in greedy_and_sampled)
    if 0 < right < sum(r.n for r in greedy_and_sampled):  # right and wrong answers: their AUROC is defined
        assert any(r["auroc"] is not None for r in rows
                   if r["source"] == "temperature" and r["phase"] == "before")
