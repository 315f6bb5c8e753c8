"""`ask_to_choose.vote`: the plain majority of the rank replies, or the debiased vote (after PriDe, Zheng
et al. 2024) that weighs a pick at position k of n listed candidates by 1 / (n · P̂_n(k)), P̂ the smoothed
share of picks at that position.

What must hold: a uniform prior changes nothing; a model that always names position 1 under `fixed` gives
every pick one weight (no position gains), so the debiased vote is the plain one; under `shuffled` a
positional model's weighted votes spread over the positions more evenly than its picks; a first-position
habit measured over a run outvotes itself. The setting is checked by name, keys the selection stage only,
is written into the picks and taken per request by `a2c serve`.
"""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.choose import AskToChoose
from a2c.common.text import normalize
from a2c.llm import GeneratorConfig, build_generator
from a2c.qa.config import A2CConfig, ExperimentConfig
from a2c.qa.decide import settings_mismatch
from a2c.qa.option_order import shown_order
from a2c.qa.rank import majority_vote
from a2c.qa.rows import CHOICES, SELECTIONS, ChoiceRow, SelectionRow
from a2c.qa.stages import a2c_slice, selection_slice
from a2c.qa.vote import VOTES, Ballot, PositionPrior, ballots, debiased_weights, elect, weighted_vote
from a2c.run.config_file import ConfigError, load_config
from a2c.run.pipeline import run_experiment
from a2c.run.store import RunFolder
from a2c.serve.config import answer_settings
from a2c.serve.per_request import override
from tests.test_serve import SETTINGS, against, chat
from tests.test_serve_answers import app_of
from tests.test_serve_calibration import calibration
from tests.view_runs import qa_config

LETTERS = ("Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot")


def _position_shares(found: list[Ballot], weight) -> list[float]:
    """Each displayed position's share of the (weighted) votes, for ballots of one prompt size."""
    n = found[0].options
    totals = [Fraction(0)] * n
    for b in found:
        assert b.position is not None
        totals[b.position] += weight(b)
    whole = sum(totals, Fraction(0))
    return [float(t / whole) for t in totals]


# -- the weights ---------------------------------------------------------------------------------------------

def test_the_prior_is_the_add_one_share_of_picks_per_position_and_prompt_size():
    found = [Ballot("A", 3, 0)] * 7 + [Ballot("B", 3, 1)] * 2 + [Ballot("x", 3, None)] * 4
    found.append(Ballot("C", 2, 1))
    prior = PositionPrior.of(found)
    assert prior.counts == {2: (0, 1), 3: (7, 2, 0)}  # "don't know" is no position: not counted
    assert [prior.share(3, k) for k in range(3)] == [Fraction(8, 12), Fraction(3, 12), Fraction(1, 12)]
    assert [prior.share(2, k) for k in range(2)] == [Fraction(1, 3), Fraction(2, 3)]  # its own size's counts
    assert prior.share(5, 4) == Fraction(1, 5)  # a size never seen: uniform
    assert prior.weight(Ballot("A", 3, 0)) == Fraction(1, 2) and prior.weight(Ballot("C", 3, 2)) == 4
    assert prior.weight(Ballot("x", 3, None)) == 1


texts = st.sampled_from(["Paris", "paris.", "Rome", "Oslo", "Bern", "Don't know"])
ballot_lists = st.lists(st.tuples(texts, st.integers(1, 5), st.integers(0, 5)), max_size=30)


def _ballots(picks: list[tuple[str, int, int]]) -> list[Ballot]:
    """(text, n, k): a pick at position k of n, or "don't know" where k is past the n candidates."""
    return [Ballot(text, n, None if k >= n else k) for text, n, k in picks]


@given(ballot_lists, ballot_lists)
def test_candidate_picks_weigh_as_many_as_they_are_and_don_t_know_one_each(picks, elsewhere):
    found = _ballots(picks)
    weights = debiased_weights(found, PositionPrior.of(found + _ballots(elsewhere)))
    candidate = [w for b, w in zip(found, weights, strict=True) if b.position is not None]
    assert sum(candidate) == len(candidate) and all(w > 0 for w in candidate)
    assert all(w == 1 for b, w in zip(found, weights, strict=True) if b.position is None)
    assert sum(weights) == len(found)  # so "don't know" keeps its plain share of the vote


@given(ballot_lists)
def test_under_a_uniform_prior_the_debiased_vote_is_the_plain_one(picks):
    found = _ballots(picks)
    uniform = PositionPrior({})
    plain = majority_vote([b.text for b in found])
    assert elect("debiased", found, uniform) == elect("plain", found) == plain


@given(st.integers(1, 6), st.lists(st.integers(0, 5), min_size=1, max_size=12), st.integers(1, 30))
def test_always_position_one_under_fixed_gives_every_pick_one_weight(n, firsts, questions):
    """Under `fixed` a model that always names 1 names the first-seen candidate of every prompt: the prior
    is all on position 1, so every pick weighs the same, no position gains, and the debiased vote (its
    winner and share) is the plain one for each question."""
    run: list[list[Ballot]] = []
    for q in range(questions):
        candidates = [LETTERS[(q + i) % len(LETTERS)] for i in range(n)]
        order = shown_order(n, "fixed", seed=0, question=f"Q{q}?", source="paraphrase", slot=0)
        run.append([Ballot(candidates[order[0]], n, 0) for _ in firsts])
    prior = PositionPrior.of(b for per_question in run for b in per_question)
    assert {prior.weight(b) for per_question in run for b in per_question} == {
        Fraction(questions * len(firsts) + n, n * (questions * len(firsts) + 1))}
    for per_question in run:
        assert set(debiased_weights(per_question, prior)) == {1}
        assert elect("debiased", per_question, prior) == elect("plain", per_question)
        assert _position_shares(per_question, prior.weight)[0] == 1.0


@given(st.integers(2, 6), st.floats(0.6, 0.95), st.integers(0, 2**32 - 1))
def test_under_shuffled_a_positional_model_s_weighted_votes_are_nearer_uniform_than_its_picks(n, habit, seed):
    """A model naming position 1 with probability `habit` (else a uniform other one) whatever is listed:
    its picks pile on position 1; the debiased votes, c_k / (c_k + 1) per position, are majorized by the
    picks' shares (each top-m sum no larger), so nearer uniform by every Schur-convex measure."""
    draw = random.Random(seed)
    found: list[Ballot] = []
    for q in range(60):
        for slot in range(n):
            order = shown_order(n, "shuffled", seed=seed, question=f"Q{q}?", source="temperature", slot=slot)
            k = 0 if draw.random() < habit else draw.randrange(1, n)
            found.append(Ballot(LETTERS[order[k]], n, k))
    prior = PositionPrior.of(found)
    plain = sorted(_position_shares(found, lambda b: Fraction(1)), reverse=True)
    debiased = sorted(_position_shares(found, prior.weight), reverse=True)
    for m in range(1, n):
        assert sum(debiased[:m]) <= sum(plain[:m]) + 1e-12

    def spread(shares: list[float]) -> float:
        return sum((s - 1 / n) ** 2 for s in shares)

    if len(set(prior.counts[n])) > 1:  # strictly, unless the draws happened to land evenly
        assert debiased[0] < plain[0] and spread(debiased) < spread(plain)


def test_a_first_position_habit_measured_over_a_run_outvotes_itself():
    # the run: 80 of 100 two-candidate picks name position 1, so P̂ = (81/102, 21/102)
    elsewhere = [Ballot("A", 2, 0)] * 74 + [Ballot("B", 2, 1)] * 16
    question = [Ballot("Rome", 2, 0)] * 6 + [Ballot("Paris", 2, 1)] * 4
    prior = PositionPrior.of(elsewhere + question)
    assert prior.counts == {2: (80, 20)}
    assert elect("plain", question) == ("Rome", 0.6)
    rome, paris = 6 * Fraction(102, 2 * 81), 4 * Fraction(102, 2 * 21)
    assert elect("debiased", question, prior) == ("Paris", float(paris / (rome + paris)))


def test_exact_ties_are_broken_as_the_plain_vote_breaks_them():
    prior = PositionPrior({3: (1, 1, 1)})
    found = [Ballot("Oslo", 3, 2), Ballot("Bern", 3, 0), Ballot("oslo", 3, 1), Ballot("Bern", 3, 1)]
    assert weighted_vote(found, debiased_weights(found, prior)) == ("Oslo", 0.5)
    assert majority_vote([b.text for b in found]) == ("Oslo", 0.5)
    assert elect("debiased", [], prior) == (None, None)


def _row(options: list[str], option: int | None, order: list[int] | None = None, slot: int = 0) -> ChoiceRow:
    text = None if option is None else ([*options, "Don't know"])[option]
    return ChoiceRow(id="q", source="paraphrase", slot=slot, shown_question="Q?", temperature=0.0,
                     options=options, reply="?", option=option, method="number" if text else "unparsed",
                     text=text, order=order)


def test_one_list_of_candidates_gives_no_prior_and_moved_lists_do():
    # one question under `fixed`: Rome always first, so its pull and the first place's are one thing
    fixed = [_row(["Rome", "Paris"], 0)] * 6 + [_row(["Rome", "Paris"], 1)] * 3 + [_row(["Rome", "Paris"], 2)]
    assert PositionPrior.of_rows(fixed).counts == {}
    assert elect("debiased", ballots(fixed), PositionPrior.of_rows(fixed)) == elect("plain", ballots(fixed))
    # the same picks with the options moved: position 1 took 6 of 9 candidate picks
    cyclic = [_row(["Rome", "Paris"] if k % 2 == 0 else ["Paris", "Rome"], 0 if k < 6 else 1,
                   None if k % 2 == 0 else [1, 0], slot=k) for k in range(9)]
    assert PositionPrior.of_rows([*cyclic, _row(["Rome"], None)]).counts == {2: (6, 3)}


def test_an_unparsed_reply_is_no_ballot_and_don_t_know_is_no_position(tmp_path):
    rows = list(_choices(tmp_path / "fixed"))
    found = ballots(rows)
    assert len(found) == sum(1 for r in rows if r.option is not None)
    assert all((b.position is None) == r.dont_know for b, r in zip(found, [r for r in rows if r.parsed],
                                                                   strict=True))


# -- the setting ---------------------------------------------------------------------------------------------

def test_an_unknown_vote_is_refused_naming_the_key_and_the_closest_vote(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("name: x\nask_to_choose:\n  vote: debias\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert ("x.yaml:3: ask_to_choose.vote: Value error, unknown vote 'debias'. Did you mean 'debiased'?"
            in message)
    assert "Known: debiased, plain" in message
    assert A2CConfig().vote == "plain" and set(VOTES.names()) == {"plain", "debiased"}


def test_the_vote_keys_the_selection_stage_and_not_the_rank_prompts():
    plain = ExperimentConfig(name="x")
    debiased = ExperimentConfig(name="x", ask_to_choose=A2CConfig(vote="debiased"))
    assert a2c_slice(plain) == a2c_slice(debiased) and "vote" not in a2c_slice(plain)["a2c"]
    assert selection_slice(plain) != selection_slice(debiased)
    # folders made before the setting keep their picks
    assert "vote" not in selection_slice(plain)["methods"][0]


def test_a_plain_pick_row_is_written_as_before_the_setting():
    row = SelectionRow(id="q", source="paraphrase", method="a2c", text="Rome", candidate=0, dont_know=False)
    assert "vote" not in row.model_dump(mode="json")
    marked = row.model_copy(update={"vote": "debiased"})
    assert SELECTIONS.loads(SELECTIONS.dumps([marked]), "selections.jsonl") == [marked]


def test_a_calibration_recorded_without_the_setting_fits_the_plain_vote_only():
    made = calibration()
    old = {**made.run.settings, "ask_to_choose": {
        k: v for k, v in made.run.settings["ask_to_choose"].items() if k != "vote"}}
    former = made.model_copy(update={"run": made.run.model_copy(update={"settings": old})})
    plain = answer_settings(SETTINGS, "")
    assert settings_mismatch(former, "scripted", plain) is None
    mismatch = settings_mismatch(former, "scripted", override(plain, {"ask_to_choose": {"vote": "debiased"}}))
    assert mismatch is not None and "ask_to_choose.vote" in mismatch


# -- a run ---------------------------------------------------------------------------------------------------

def _run(root: Path, vote: str, order: str = "fixed"):
    config = qa_config(root, limit=12, ask_to_choose={"vote": vote, "option_order": order})
    return config, run_experiment(config, progress=False)


def _choices(root: Path):
    config, _ = _run(root, "plain")
    return RunFolder(config.run_dir).read_rows(CHOICES)


def _by_hand(folder: RunFolder) -> dict[tuple[str, str], str | None]:
    """Each (question, source)'s debiased pick, counted here from choices.jsonl with the run's prior."""
    rows = folder.read_rows(CHOICES)
    counts: dict[int, list[int]] = {}
    lists: dict[int, set[tuple[str, ...]]] = {}
    for r in rows:
        if r.option is not None and not r.dont_know:
            counts.setdefault(len(r.options), [0] * len(r.options))[r.option] += 1
            lists.setdefault(len(r.options), set()).add(tuple(map(normalize, r.options)))
    counts = {n: c if len(lists[n]) > 1 else [0] * n for n, c in counts.items()}  # one list: no prior
    assert any(sum(c) for c in counts.values())
    votes: dict[tuple[str, str], list[tuple[str, Fraction | None]]] = {}  # None: "don't know"
    for r in rows:
        if r.text is None:
            continue
        n = len(r.options)
        u = None if r.dont_know else Fraction(sum(counts[n]) + n, n * (counts[n][r.option] + 1))
        votes.setdefault((r.id, r.source), []).append((r.text, u))
    out = {}
    for key, got in votes.items():
        picked = [u for _, u in got if u is not None]
        scale = len(picked) / sum(picked, Fraction(0)) if picked else 1
        per: dict[str, Fraction] = {}
        for text, u in got:
            per[normalize(text)] = per.get(normalize(text), Fraction(0)) + (1 if u is None else u * scale)
        out[key] = next(t for t, _ in got if per[normalize(t)] == max(per.values()))
    return out


def test_a_debiased_run_records_its_vote_and_a_rerun_with_another_reuses_the_rank_replies(tmp_path):
    config, first = _run(tmp_path, "debiased")
    assert {"ask_to_choose", "selection"} <= {n for n, s in first.stages.items() if not s.skipped}
    folder = RunFolder(config.run_dir)
    picks = [r for r in folder.read_rows(SELECTIONS) if r.method == "a2c"]
    assert picks and {r.vote for r in picks} == {"debiased"}
    assert '"vote": "debiased"' in folder.read_text("selections.jsonl").replace('":"', '": "')
    expected = _by_hand(folder)
    assert {(r.id, r.source): r.text for r in picks if r.text is not None} == expected
    choices_before = folder.read_text("choices.jsonl")

    _, again = _run(tmp_path, "plain")
    ran = [n for n, s in again.stages.items() if not s.skipped]
    assert "selection" in ran and not {"variation", "answers", "ask_to_choose"} & set(ran)
    assert again.stages["selection"].generated == 0
    assert folder.read_text("choices.jsonl") == choices_before
    plain = [r for r in folder.read_rows(SELECTIONS) if r.method == "a2c"]
    assert {r.vote for r in plain} == {None}
    assert all(r.text == majority_vote([c.text for c in folder.read_rows(CHOICES)
                                        if c.id == r.id and c.source == r.source and c.text is not None])[0]
               for r in plain)
    # the scripted model's position habit moves some picks, or the test would show nothing
    assert any(expected.get((r.id, r.source)) != r.text for r in plain)


# -- the wrapper and a2c serve ---------------------------------------------------------------------------

SCRIPT = "scripted:1|2|1|Paris|Rome|Oslo|3"
QUESTIONS = ("What is the capital of Norway?", "What is the capital of Italy?",
             "Which planet is the largest?")


def test_the_wrapper_counts_each_question_s_own_replies():
    generator = build_generator(GeneratorConfig(backend="scripted", model=SCRIPT, cache=None))
    settings = A2CConfig(vote="debiased", option_order="cyclic")
    wrapper = AskToChoose(generator, a2c=settings, temperatures=(0.5, 1.0), samples=2, selection=["a2c"])
    together = wrapper.answer_many(list(QUESTIONS))
    pooled = PositionPrior.of_rows([c for choice in together for c in choice.choices])
    moved = 0
    for question, choice in zip(QUESTIONS, together, strict=True):
        alone = wrapper.answer(question)
        assert (alone.answer, alone.consistency) == (choice.answer, choice.consistency)
        found = ballots(choice.choices)
        own = elect("debiased", found, PositionPrior.of_rows(choice.choices))
        assert (choice.answer, choice.consistency["vote_share"]) == own
        assert {row.vote for row in choice.selections["a2c"].values()} == {"debiased"}
        moved += own[0] != elect("plain", found)[0]
        moved += own[0] != elect("debiased", found, pooled)[0]
    assert moved  # the scripted replies make the question's own prior matter, or this shows nothing


def test_a_request_may_set_the_vote_and_a_bad_one_is_a_400_naming_the_key():
    model = "scripted:Paris|Rome|Oslo"
    app = app_of(model)

    async def scenario(client: httpx.AsyncClient) -> list[httpx.Response]:
        bodies = ({}, {"a2c": {"ask_to_choose": {"vote": "debiased"}}},
                  {"a2c": {"ask_to_choose": {"vote": "debias"}}}, {"a2c": {"ask_to_choose": {"vote": 1}}})
        return [await client.post("/v1/chat/completions", json={**chat(QUESTIONS[0], **body), "model": model})
                for body in bodies]

    default, debiased, typo, number = against(app, scenario)
    assert default.status_code == debiased.status_code == 200
    assert default.json()["a2c"]["settings"]["ask_to_choose"]["vote"] == "plain"
    assert debiased.json()["a2c"]["settings"]["ask_to_choose"]["vote"] == "debiased"
    for refused in (typo, number):
        assert refused.status_code == 400
        assert refused.json()["error"]["param"] == "a2c.ask_to_choose.vote"
    assert "Did you mean 'debiased'?" in typo.json()["error"]["message"]
