"""Selection methods (`a2c.qa.selection`): each on constructed candidates with hand-made matrices, USC's
prompt and parse on the scripted backend, the config's checks, and a run on the scripted backend with every
method (the stage, its key, the random expectation, the summary, the uncertainty measures)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from a2c.judges import build_judge
from a2c.llm import GenerationRequest, GeneratorConfig, build_generator
from a2c.llm.scripted import ScriptedBackend
from a2c.metrics import eigval_laplacian, majority_cluster_index, medoid_index, semantic_clusters
from a2c.metrics.uncertainty import degree_confidence
from a2c.qa.config import ExperimentConfig
from a2c.qa.idk import DEFAULT_IDK_TEXT
from a2c.qa.rank import majority_vote
from a2c.qa.rows import (
    CHOICES,
    GENERATIONS,
    MATRICES,
    METRICS,
    SELECTION_SCORES,
    SELECTIONS,
    SOURCES,
    UNCERTAINTY,
    ChoiceRow,
    Question,
    Source,
)
from a2c.qa.selection import SELECTION_METHODS, SelectionInputs, select
from a2c.qa.summary import QASummary
from a2c.qa.usc import Responses, read_usc_reply
from a2c.run.config_file import parse_config
from a2c.run.pipeline import run_experiment
from a2c.run.runfiles import MatrixSet
from a2c.run.store import RunFolder
from a2c.settings.config import ConfigError, dump_config

QUESTION = Question("q0", "Which city is the capital of Australia?")


def _config(**data: Any) -> ExperimentConfig:
    return ExperimentConfig.model_validate({"name": "selection", **data})


def _inputs(config: ExperimentConfig, candidates: dict[Source, list[str]], *,
            matrices: dict[str, dict[Source, list[list[float]]]] | None = None,
            choices: Sequence[ChoiceRow] = (), model: str = "scripted:1") -> SelectionInputs:
    """One question's candidates, hand-made matrices (judge → source → matrix) and rank choices."""
    judges = {spec.name: build_judge(spec.name, **spec.options) for spec in config.judges}
    grouped: dict[tuple[str, Source], list[ChoiceRow]] = {}
    for row in choices:
        grouped.setdefault((row.id, row.source), []).append(row)
    arrays = MatrixSet({(j, s, QUESTION.id): np.asarray(m, dtype=np.float64)
                        for j, per_source in (matrices or {}).items() for s, m in per_source.items()})
    generator = build_generator(GeneratorConfig(backend="scripted", model=model, cache=None))
    return SelectionInputs(config, [QUESTION], {QUESTION.id: {s: candidates.get(s, []) for s in SOURCES}},
                           grouped, lambda: arrays, judges.__getitem__, lambda: generator)


def _picks(inputs: SelectionInputs, method: str, **options: Any) -> dict[Source, Any]:
    from a2c.qa.config import SelectionConfig

    rows = list(select(lambda _method: [inputs], [SelectionConfig(name=method, **options)]))
    assert [(r.id, r.method) for r in rows] == [(QUESTION.id, method)] * len(SOURCES)
    return {r.source: r for r in rows}


def _choice(source: Source, options: list[str], option: int | None) -> ChoiceRow:
    text = None if option is None else DEFAULT_IDK_TEXT if option == len(options) else options[option]
    return ChoiceRow(id=QUESTION.id, source=source, slot=0, shown_question=QUESTION.question, temperature=0.0,
                     options=options, reply="?", option=option, method="number" if option is not None
                     else "unparsed", text=text)


# -- a2c: the majority of the rank choices ----------------------------------------------------------------

def test_a2c_picks_the_majority_of_the_parsed_choices_and_maps_it_to_a_candidate():
    options = ["Sydney", "canberra", "Melbourne"]  # as RankOptions merged the candidates below
    choices = [_choice("paraphrase", options, o) for o in (1, 0, 1, None)] \
        + [_choice("temperature", options, o) for o in (0, 1)]
    picks = _picks(_inputs(_config(), {"paraphrase": ["Sydney", "canberra", "Canberra.", "Melbourne"],
                                       "temperature": ["Melbourne", "Sydney", "Canberra"]},
                           choices=choices), "a2c")
    # 2 of 3 parsed choices say canberra (the unparsed one does not vote); it is candidate 1
    assert (picks["paraphrase"].text, picks["paraphrase"].candidate) == ("canberra", 1)
    # a tie goes to the option chosen first, as in the wrapper: Sydney, which is candidate 1 of this source
    assert (picks["temperature"].text, picks["temperature"].candidate) == ("Sydney", 1)
    # calls: its rank prompts plus the 4 fresh paraphrases (one per technique) they show
    assert (picks["paraphrase"].calls, picks["temperature"].calls) == (4 + 4, 2 + 4)
    assert picks["paraphrase"].dont_know is False and picks["paraphrase"].reply is None


def test_a2c_counts_a_dont_know_majority_and_picks_nothing_without_a_parsed_choice():
    options = ["Sydney", "Canberra"]
    choices = [_choice("paraphrase", options, o) for o in (2, 2, 0)] \
        + [_choice("temperature", options, None)]
    inputs = _inputs(_config(), {"paraphrase": options, "temperature": options}, choices=choices)
    picks = _picks(inputs, "a2c")
    assert (picks["paraphrase"].text, picks["paraphrase"].candidate) == (DEFAULT_IDK_TEXT, None)
    assert picks["paraphrase"].dont_know is True
    assert (picks["temperature"].text, picks["temperature"].candidate) == (None, None)
    assert majority_vote([]) == (None, None)


# -- medoid and majority cluster on hand-made matrices ----------------------------------------------------

# mean agreement to the others: row sums without the diagonal are 0.4, 1.2, 1.7, 1.1 → candidate 2
AGREEMENT = [[1.0, 0.1, 0.2, 0.1],
             [0.1, 1.0, 0.8, 0.3],
             [0.2, 0.8, 1.0, 0.7],
             [0.1, 0.3, 0.7, 1.0]]
FOUR = ["a", "b", "c", "d"]


def test_medoid_takes_the_highest_mean_agreement_under_its_judge():
    contradiction = (1.0 - np.asarray(AGREEMENT)).tolist()  # contra: high = disagree, 0 on the diagonal
    config = _config(judges=["rouge1", "contra"])
    inputs = _inputs(config, {"paraphrase": FOUR, "temperature": ["x"]},
                     matrices={"rouge1": {"paraphrase": AGREEMENT, "temperature": [[1.0]]},
                               "contra": {"paraphrase": contradiction, "temperature": [[0.0]]}})
    default = _picks(inputs, "medoid")  # the first judge
    assert (default["paraphrase"].text, default["paraphrase"].candidate) == ("c", 2)
    assert (default["temperature"].candidate, default["paraphrase"].calls) == (0, 0)  # one is its own medoid
    # contra read as agreement 1 − P(contradiction): the same medoid (its raw row sums would pick "a")
    assert _picks(inputs, "medoid", judge="contra")["paraphrase"].candidate == 2
    assert medoid_index(contradiction) == 0


def test_majority_cluster_takes_the_largest_cluster_then_the_most_cohesive():
    # threshold 0.5: a~d (0.6) and b~c (0.9): two clusters of two; b~c agrees more → its first member, b
    tied = [[1.0, 0.2, 0.1, 0.6],
            [0.2, 1.0, 0.9, 0.1],
            [0.1, 0.9, 1.0, 0.2],
            [0.6, 0.1, 0.2, 1.0]]
    # a~b~c (all ≥ 0.5 with a), d alone: the cluster of three wins, its first member a
    three = [[1.0, 0.7, 0.6, 0.1],
             [0.7, 1.0, 0.5, 0.2],
             [0.6, 0.5, 1.0, 0.3],
             [0.1, 0.2, 0.3, 1.0]]
    config = _config(judges=["embedding", {"name": "rouge1", "threshold": 0.5}], entropy_judge="rouge1")
    inputs = _inputs(config, {"paraphrase": FOUR, "temperature": FOUR},
                     matrices={"rouge1": {"paraphrase": tied, "temperature": three}})
    picks = _picks(inputs, "majority_cluster")
    assert (picks["paraphrase"].text, picks["paraphrase"].candidate) == ("b", 1)
    assert (picks["temperature"].text, picks["temperature"].candidate) == ("a", 0)
    equivalent = build_judge("rouge1", threshold=0.5).equivalent(np.asarray(tied))
    assert semantic_clusters(equivalent) == [0, 1, 1, 0]
    assert majority_cluster_index([0, 1, 1, 0], tied) == 1


def test_methods_pick_nothing_from_no_candidates():
    none = {"rouge1": {s: np.zeros((0, 0)) for s in SOURCES}}
    inputs = _inputs(_config(judges=["rouge1"]), {}, matrices=none)
    for method in ("medoid", "majority_cluster", "usc", "a2c"):
        assert all(p.text is None and p.candidate is None for p in _picks(inputs, method).values()), method


# -- USC on the scripted backend --------------------------------------------------------------------------

@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[list[GenerationRequest]]:
    """The jobs of every backend call."""
    calls: list[list[GenerationRequest]] = []
    original = ScriptedBackend.run

    def recording(self, jobs, emit):
        calls.append(list(jobs))
        return original(self, jobs, emit)

    monkeypatch.setattr(ScriptedBackend, "run", recording)
    return calls


def test_usc_lists_every_candidate_once_per_set_in_one_batched_call(asked):
    candidates = {"paraphrase": ["Canberra", "", "Sydney", "Canberra"],
                  "temperature": ["Perth", "Perth  ", "Canberra"]}
    picks = _picks(_inputs(_config(), candidates, model="scripted:2"), "usc")
    assert len(asked) == 1 and len(asked[0]) == 2  # both sets in one call
    prompt = asked[0][0].messages[-1].content
    # repeats kept (they are the evidence), the empty answer left out, no "don't know" option
    assert "Responses:\n1. Canberra\n2. Sydney\n3. Canberra\nWhich response is most consistent" in prompt
    assert DEFAULT_IDK_TEXT not in prompt and QUESTION.question in prompt
    assert asked[0][0].temperature == 0.0 and asked[0][0].stop == ("\n",) and asked[0][0].max_tokens == 8
    # reply "2": response 2 is candidate 2 (candidate 1, empty, was not shown)
    assert (picks["paraphrase"].text, picks["paraphrase"].candidate) == ("Sydney", 2)
    paraphrase = picks["paraphrase"]
    assert (paraphrase.reply, paraphrase.parse, paraphrase.calls) == ("2", "number", 1)
    assert picks["temperature"].text == "Perth  "  # the candidate as given, whitespace and all


def test_usc_asks_nothing_for_a_single_candidate(asked):
    picks = _picks(_inputs(_config(), {"paraphrase": ["Canberra", " "], "temperature": []}), "usc")
    assert asked == []
    only = picks["paraphrase"]
    assert (only.text, only.candidate, only.calls, only.reply) == ("Canberra", 0, 0, None)
    assert picks["temperature"].text is None


@pytest.mark.parametrize(("reply", "candidate", "parse"), [
    ("3", 3, "number"),
    ("Option 3", 3, "number"),
    ("Sydney", 2, "text"),
    ("Canberra", 0, "text"),  # said twice: the first of them
    ("4", None, "unparsed"),  # one past the last response: the rank prompt's "don't know" number
    ("Don't know", None, "idk"),
    ("Perth", None, "unparsed"),
    ("", None, "unparsed"),
])
def test_usc_reads_replies_with_the_rank_parser(reply, candidate, parse):
    responses = Responses.of(["Canberra", "", "Sydney", "Canberra"])
    found = read_usc_reply(reply, responses)
    assert found.candidate == candidate
    model = f"scripted:{reply}" if reply else "scripted: "
    inputs = _inputs(_config(), {"paraphrase": list(responses.candidates)}, model=model)
    pick = _picks(inputs, "usc")["paraphrase"]
    assert (pick.candidate, pick.parse, pick.unparsed) == (candidate, parse, candidate is None)


# -- config -----------------------------------------------------------------------------------------------

def test_selection_is_a2c_by_default_and_takes_names_or_options():
    assert [s.name for s in _config().selection] == ["a2c"]
    config = _config(judges=["embedding", "rouge1"],
                     selection=["a2c", "usc", {"name": "medoid", "judge": "rouge1"}, "majority_cluster",
                                "random"])
    assert [s.name for s in config.selection_methods] == ["a2c", "usc", "medoid", "majority_cluster"]
    dumped = dump_config(config)
    assert "selection:\n- a2c\n- usc\n- name: medoid\n  judge: rouge1\n" in dumped
    assert parse_config(dumped) == config
    # A2C off: the default picks nothing (a run without A2C stays valid) ...
    assert _config(a2c={"enabled": False}).selection_methods == []
    assert set(SELECTION_METHODS.names()) == {"a2c", "usc", "medoid", "majority_cluster", "main", "random"}


@pytest.mark.parametrize(("lines", "message"), [
    ("selection: [a2c, medoidd]", "config.yaml:3: selection.1.name: Value error, unknown selection method "
                                  "'medoidd'. Did you mean 'medoid'?"),
    ("selection:\n  - {name: medoid, judge: contra}", "config.yaml:3: selection: Value error, medoid: judge "
                                                      "'contra' is not among the judges ['embedding']"),
    ("selection:\n  - {name: medoid, judge: nope}",
     "config.yaml:4: selection.0.judge: Value error, unknown judge 'nope'"),
    ("selection:\n  - {name: usc, max_tokens: x}",
     "config.yaml:4: selection.0.max_tokens: Input should be a valid integer"),
    ("selection:\n  - {name: usc, temperature: 1}",
     "config.yaml:4: selection.0.temperature: unknown option; this selection method takes ['max_tokens']"),
    ("selection: [usc, usc]", "config.yaml:3: selection: Value error, selection methods are listed twice"),
    ("ask_to_choose: {enabled: false}\nselection: [a2c, usc]",
     "config.yaml:4: selection: Value error, a2c picks from the rank choices: it needs Ask-to-Choose "
     "(ask_to_choose.enabled: true)"),
])
def test_bad_selection_fails_at_load_with_file_and_line(lines, message):
    with pytest.raises(ConfigError) as caught:
        parse_config(f"name: x\njudges: [embedding]\n{lines}\n", "config.yaml")
    assert message in str(caught.value)


# -- a run with every method on the scripted backend ------------------------------------------------------

SCRIPT = "scripted:1|2|Paris|Rome\nMadrid|" + "|".join(["Which one?"] * 6)
ALL = ["a2c", "usc", {"name": "medoid", "judge": "rouge1"}, "majority_cluster"]


def _run_config(tmp: Path, selection: list[Any], judges: Sequence[str] = ("exact", "rouge1")
                ) -> ExperimentConfig:
    return _config(limit=4, output=str(tmp / "run"),
                   generator={"backend": "scripted", "model": SCRIPT, "cache": str(tmp / "cache.sqlite")},
                   judges=list(judges), accuracy={"similarities": ["rouge1"]}, selection=selection)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run with every method (folder and request cache)."""
    root = tmp_path_factory.mktemp("selection")
    run_experiment(_run_config(root, ALL), progress=False)
    return root


def test_a_run_stores_every_methods_pick_as_its_selectors_make_it(finished):
    folder = RunFolder(finished / "run")
    picks = folder.read_rows(SELECTIONS)
    questions = sorted({g.id for g in folder.read_rows(GENERATIONS)})
    assert len(picks) == 4 * len(questions) * 2  # method × question × source (random picks nothing)
    candidates = {(g.id, g.source): [] for g in folder.read_rows(GENERATIONS)}
    for g in folder.read_rows(GENERATIONS):
        candidates[(g.id, g.source)].append(g.short)
    matrices = folder.read_matrices(MATRICES["before"])
    choices: dict[tuple[str, str], list[str]] = {}
    for c in folder.read_rows(CHOICES):
        choices.setdefault((c.id, c.source), []).append(c.text)
    for pick in picks:
        texts = candidates[(pick.id, pick.source)]
        if pick.method == "medoid":
            assert pick.candidate == medoid_index(matrices[("rouge1", pick.source, pick.id)])
        elif pick.method == "majority_cluster":
            m = matrices[("exact", pick.source, pick.id)]  # the entropy judge: the first listed
            clusters = semantic_clusters(build_judge("exact").equivalent(m))
            assert pick.candidate == majority_cluster_index(clusters, m)
        elif pick.method == "a2c":
            parsed = [t for t in choices[(pick.id, pick.source)] if t is not None]
            assert pick.text == majority_vote(parsed)[0]
        else:
            assert pick.calls == (1 if len({i for i, t in enumerate(texts) if t.strip()}) >= 2 else 0)
            assert pick.unparsed == (pick.reply is not None and pick.text is None)
        if pick.candidate is not None:
            assert pick.text == texts[pick.candidate]


def test_random_is_the_exact_expectation_and_the_summary_compares_with_it(finished):
    folder = RunFolder(finished / "run")
    scores = folder.read_rows(SELECTION_SCORES)
    before = {(r.id, r.source): r for r in folder.read_rows(METRICS) if r.phase == "before"}
    randoms = [r for r in scores if r.method == "random"]
    assert len(randoms) == len(before)
    for r in randoms:  # the mean over the candidates of their scores
        assert r.accuracy["rouge1"] == before[(r.id, r.source)].accuracy["rouge1"] and r.calls == 0
    summary = QASummary.model_validate_json((finished / "run" / "summary.json").read_text())
    assert summary.schema_version == 3
    assert [(s.source, s.method) for s in summary.selection] == [
        (source, m) for source in SOURCES for m in ("a2c", "usc", "medoid", "majority_cluster", "random")]
    usc = next(s for s in summary.selection if s.method == "usc" and s.source == "paraphrase")
    mine = [r for r in scores if r.method == "usc" and r.source == "paraphrase"]
    assert usc.calls == sum(r.calls for r in mine) and usc.unparsed == sum(r.unparsed for r in mine)
    assert usc.picked == sum(r.picked for r in mine) and usc.dont_know_share is None
    picked = [r.accuracy["rouge1"].acc for r in mine if r.accuracy["rouge1"] is not None]
    assert usc.accuracy["rouge1"].mean == (sum(picked) / len(picked) if picked else None)
    assert usc.vs_random["rouge1"].pairs + usc.vs_random["rouge1"].dropped == 4
    assert set(usc.vs_a2c) == {"rouge1"}
    a2c = next(s for s in summary.selection if s.method == "a2c" and s.source == "paraphrase")
    assert a2c.vs_a2c == {} and a2c.dont_know_share is not None
    assert next(s for s in summary.selection if s.method == "random").vs_random == {}
    assert (finished / "run" / "table_selection.csv").read_text().startswith(
        "method,selection,R1-A,Don't-know share of picks,picked,unparsed,model calls / question,"
        "R1-A − random,R1-A − random low,R1-A − random high,R1-A − A2C,")
    assert "## Picking one answer" in (finished / "run" / "report.md").read_text()


def test_the_uncertainty_measures_come_from_the_stored_matrices(finished):
    folder = RunFolder(finished / "run")
    rows = folder.read_rows(UNCERTAINTY)
    matrices = {phase: folder.read_matrices(MATRICES[phase]) for phase in ("before", "after")}
    assert len(rows) == len(folder.read_rows(METRICS))
    for r in rows:
        m = matrices[r.phase][("rouge1", r.source, r.id)]
        assert r.sets["eigval_laplacian"]["rouge1"] == eigval_laplacian(m)
        expected = degree_confidence(m)
        assert r.answers["degree_confidence"]["rouge1"] == (None if expected is None else expected.tolist())
        assert "kernel_language_entropy" not in r.sets  # needs the entail and contra judges
    summary = QASummary.model_validate_json((finished / "run" / "summary.json").read_text())
    metrics = {(s.metric, s.level) for s in summary.signal}
    assert ("-U_EigV (R1-C)", "set") in metrics and ("C_Deg (Exact, per answer)", "answer") in metrics
    assert ("Emb Cons_sem", "set") not in metrics and ("Exact Cons_sem", "set") in metrics
    assert "C_Ecc (R1-C, per answer)" in (finished / "run" / "table_signal.csv").read_text()


def test_adding_a_method_reruns_only_selection_and_what_reads_it(finished, tmp_path):
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True)
    first = run_experiment(_run_config(tmp_path, ["a2c"]), progress=False)
    assert [n for n, s in first.stages.items() if not s.skipped] == ["selection", "metrics", "report"]
    again = run_experiment(_run_config(tmp_path, ["a2c", "medoid"]), progress=False)
    assert [n for n, s in again.stages.items() if not s.skipped] == ["selection", "metrics", "report"]
    assert again.stages["selection"].why == "config changed: methods"
    assert again.totals().generated == again.totals().cached == 0
    with_usc = run_experiment(_run_config(tmp_path, ["a2c", "medoid", "usc"]), progress=False)
    assert [n for n, s in with_usc.stages.items() if not s.skipped] == ["selection", "metrics", "report"]
    usc = [r for r in RunFolder(tmp_path / "run").read_rows(SELECTIONS) if r.method == "usc"]
    # the first run asked them: the request cache serves every USC prompt
    assert with_usc.stages["selection"].cached == sum(r.calls for r in usc) > 0
    assert with_usc.stages["selection"].generated == 0
    # a judge no method reads changes no pick: the judges run again, selection is reused
    more_judges = _run_config(tmp_path, ["a2c", "medoid", "usc"], judges=["exact", "rouge1", "ner"])
    judged = run_experiment(more_judges, progress=False)
    assert not judged.stages["judges_before"].skipped and judged.stages["selection"].skipped


# -- the wrapper and the probe ----------------------------------------------------------------------------

def test_the_wrapper_gives_each_methods_pick_as_a_run_does(finished):
    from a2c.choose import AskToChoose
    from a2c.judges import JudgeSpec
    from a2c.qa.data import load_records

    config = _run_config(finished, ALL)
    question = load_records("quickstart", limit=1)[0]
    wrapper = AskToChoose(build_generator(config.generator), selection=ALL)
    judges = [JudgeSpec(name="exact"), JudgeSpec(name="rouge1")]
    choice = wrapper.answer_many([question.question], judges=judges)[0]
    assert set(choice.selections) == {"a2c", "usc", "medoid", "majority_cluster"}
    stored = {(r.method, r.source): r for r in RunFolder(finished / "run").read_rows(SELECTIONS)
              if r.id == question.id}
    for method, per_source in choice.selections.items():
        assert set(per_source) == set(SOURCES)
        for source, pick in per_source.items():
            assert pick.model_dump(exclude={"id"}) == stored[(method, source)].model_dump(exclude={"id"})
    assert AskToChoose(build_generator(config.generator)).answer(question.question).selections == {}


def test_the_wrapper_refuses_random_and_a_judge_it_was_not_given():
    from a2c.choose import AskToChoose
    from a2c.judges import JudgeSpec
    from a2c.qa.selection import SelectionError

    generator = build_generator(GeneratorConfig(backend="scripted", model="scripted:1", cache=None))
    with pytest.raises(SelectionError, match="'random' picks no answer"):
        AskToChoose(generator, selection=["random"])
    wrapper = AskToChoose(generator, selection=[{"name": "medoid", "judge": "rouge1"}])
    with pytest.raises(SelectionError, match=r"medoid: judge 'rouge1' is not among the judges \['exact'\]"):
        wrapper.answer_many(["Why?"], judges=[JudgeSpec(name="exact")])


def test_the_quickstart_takes_every_selection_method():
    text = (Path(__file__).parents[1] / "experiments" / "quickstart.yaml").read_text(encoding="utf-8")
    line = "# selection: [a2c, usc, medoid, majority_cluster]\n"
    assert line in text
    config = parse_config(text.replace(line, line[2:]), "quickstart.yaml")
    assert [s.name for s in config.selection_methods] == ["a2c", "usc", "medoid", "majority_cluster"]
    assert parse_config(text, "quickstart.yaml").selection_methods == [config.selection[0]]
