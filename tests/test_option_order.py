"""`ask_to_choose.option_order`: rank prompts that list the candidates as first seen (`fixed`, the paper's),
permuted per prompt (`shuffled`) or rotated by slot (`cyclic`); "don't know" last in every one.

A model that picks by position (the scripted `scripted:1`, which always answers "1") elects the first-seen
candidate under `fixed`; under `shuffled` and `cyclic` its picks spread over the candidates. A reply maps
back to the candidate shown at the position it names, whatever the order.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from a2c.choose import AskToChoose, RankChoice, RankItem, RankOptions, choose, parse_reply, rank_items
from a2c.common.text import normalize
from a2c.llm import GeneratorConfig, build_generator
from a2c.qa.config import A2CConfig, ExperimentConfig
from a2c.qa.decide import settings_mismatch
from a2c.qa.option_order import OPTION_ORDERS, shown_order
from a2c.qa.rows import CHOICES, ChoiceRow
from a2c.qa.stages import a2c_slice
from a2c.serve.config import answer_settings
from a2c.serve.per_request import override
from tests.test_serve import SETTINGS, against, chat
from tests.test_serve_answers import app_of
from tests.test_serve_calibration import calibration

LETTERS = ("Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot")
orders = st.sampled_from(OPTION_ORDERS)


def always_first():
    """A model that answers "1" to every prompt: a pure position bias."""
    return build_generator(GeneratorConfig(backend="scripted", model="scripted:1", cache=None))


def _items(n: int, order: str, questions: int, slots: int, seed: int = 0) -> list[RankItem]:
    items: list[RankItem] = []
    for q in range(questions):
        items += rank_items(q, f"Question {q}?", "temperature", [f"Question {q}, asked again?"] * slots,
                            LETTERS[:n], [0.7] * slots, seed, option_order=order)  # type: ignore[arg-type]
    return items


def _first_seen(choice: RankChoice) -> int:
    """The chosen candidate's first-seen option index (here each candidate is its own option)."""
    candidate = choice.candidate
    assert candidate is not None
    return candidate


# -- the order -----------------------------------------------------------------------------------------------

@given(st.integers(0, 9), orders, st.integers(0, 2**32 - 1), st.text(max_size=20), st.integers(0, 40))
def test_every_order_is_a_permutation_and_the_same_on_a_rerun(n, order, seed, question, slot):
    shown = shown_order(n, order, seed=seed, question=question, source="paraphrase", slot=slot)
    assert sorted(shown) == list(range(n))
    assert shown == shown_order(n, order, seed=seed, question=question, source="paraphrase", slot=slot)
    if order == "fixed":
        assert shown == tuple(range(n))
    if order == "cyclic":
        assert shown == tuple((slot + k) % n for k in range(n))


def test_shuffled_orders_follow_the_seed_the_question_and_the_slot():
    def of(seed: int = 0, question: str = "Q?", slot: int = 0, source: str = "paraphrase") -> tuple[int, ...]:
        return shown_order(5, "shuffled", seed=seed, question=question, source=source, slot=slot)

    # pinned: a changed permutation would make every shuffled prompt of an existing run miss the cache
    assert of() == (4, 3, 2, 0, 1)
    assert len({of(slot=s) for s in range(20)}) > 10
    assert len({of(seed=s) for s in range(20)}) > 10
    assert len({of(question=f"Q{i}?") for i in range(20)}) > 10
    assert of(source="temperature") != of() or of(source="temperature", slot=1) != of(slot=1)
    with pytest.raises(ValueError, match="fixed, shuffled, cyclic"):
        shown_order(3, "random", seed=0, question="Q?", source="paraphrase", slot=0)  # type: ignore[arg-type]


def test_fixed_prompts_are_the_first_seen_options_in_every_slot():
    built = RankOptions.build(LETTERS[:4])
    for item in _items(4, "fixed", questions=2, slots=5):
        assert item.options == built and item.options.order is None
    assert built.arranged(range(4)) is built  # the identity changes nothing, a cyclic slot 0 included


def test_arranging_twice_or_by_a_non_permutation_is_refused():
    built = RankOptions.build(LETTERS[:3])
    with pytest.raises(ValueError, match="not a permutation"):
        built.arranged([0, 0, 1])
    with pytest.raises(ValueError, match="already arranged"):
        built.arranged([2, 0, 1]).arranged([1, 0, 2])


@given(st.lists(st.sampled_from(["Paris", "paris.", "Rome", "", "  Oslo ", "8 legs", "2", "Bern"]),
                min_size=1, max_size=8), orders, st.integers(0, 2**32 - 1), st.integers(0, 12))
def test_a_reply_naming_a_position_maps_back_to_the_candidate_shown_there(candidates, order, seed, slot):
    built = RankOptions.build(candidates)
    if not built.options:
        return
    shown = built.arranged(shown_order(len(built.options), order, seed=seed, question="Q?",
                                       source="paraphrase", slot=slot))
    item = RankItem(0, "paraphrase", slot, "Q?", shown, 0.0, seed=1)
    for k, text in enumerate(candidates):
        position = shown.candidate_option[k]
        if position is None:
            assert not normalize(text)
            continue
        for reply in (str(position + 1), f"Option {position + 1}"):
            choice = RankChoice(item, reply, parse_reply(reply, shown))
            assert choice.parsed.option == position
            assert k in shown.candidates_of(position)
            assert normalize(choice.text or "") == normalize(text)
            row = choice.row("q")
            # the row lists what was shown, and `order` leads back to the first-seen list
            assert row.options[position] == choice.text
            first_seen = position if row.order is None else row.order[position]
            assert built.options[first_seen] == row.options[position]
    # "don't know" is listed last, as number n + 1, in every order
    assert shown.render().splitlines()[-1] == f"{len(shown.options) + 1}. {shown.idk_text}"
    idk = RankChoice(item, str(len(shown.options) + 1), parse_reply(str(len(shown.options) + 1), shown))
    assert idk.row("q").dont_know and idk.candidate is None


# -- a model that always answers "1" -------------------------------------------------------------------------

def test_a_first_position_picker_elects_the_first_seen_candidate_under_fixed():
    choices = choose(always_first(), _items(4, "fixed", questions=10, slots=4))
    assert {c.reply for c in choices} == {"1"}
    assert Counter(map(_first_seen, choices)) == {0: 40}


@pytest.mark.parametrize("n", [2, 3, 5])
def test_under_cyclic_each_candidate_is_picked_equally_often_over_a_multiple_of_n_slots(n):
    choices = choose(always_first(), _items(n, "cyclic", questions=3, slots=2 * n))
    assert Counter(map(_first_seen, choices)) == dict.fromkeys(range(n), 3 * 2)


def _rotation(slot: int, n: int) -> list[int]:
    return [(slot + k) % n for k in range(n)]


def _chi_square(counts: Counter[int], n: int) -> float:
    expected = sum(counts.values()) / n
    return sum((counts[k] - expected) ** 2 / expected for k in range(n))


def test_under_shuffled_a_first_position_picker_spreads_its_picks_over_the_candidates():
    choices = choose(always_first(), _items(4, "shuffled", questions=150, slots=4))
    counts = Counter(map(_first_seen, choices))
    # 600 picks, 150 expected each: chi-square (3 degrees of freedom) under 16.27 is p > 0.001; fixed's
    # all-on-one would be 1800
    assert _chi_square(counts, 4) < 16.27 and min(counts.values()) > 100


@given(st.integers(0, 2**32 - 1), st.integers(2, 6))
def test_shuffled_first_positions_are_near_uniform_for_any_seed(seed, n):
    firsts = Counter(shown_order(n, "shuffled", seed=seed, question=f"Q{q}?", source="paraphrase",
                                 slot=slot)[0] for q in range(100) for slot in range(n))
    # 100 n picks, chi-square with n - 1 degrees of freedom: 60 is beyond p = 1e-9 for each n here, while
    # one option always first would score 100 n (n - 1)
    assert _chi_square(firsts, n) < 60


# -- rows, resuming, the wrapper and a calibration --------------------------------------------------------

def test_choice_rows_write_order_only_when_it_is_not_first_seen():
    fixed, = choose(always_first(), _items(3, "fixed", questions=1, slots=1))
    assert "order" not in fixed.row("q").model_dump(mode="json")  # the row a2c wrote before the setting
    shuffled = choose(always_first(), _items(3, "shuffled", questions=1, slots=6))
    rows = [c.row("q") for c in shuffled]
    assert any(r.order is not None for r in rows)
    assert CHOICES.loads(CHOICES.dumps(rows), "choices.jsonl") == rows
    old = ChoiceRow.model_validate_json(CHOICES.dumps([fixed.row("q")]))
    assert old.order is None and old == fixed.row("q")


def test_fixed_keeps_the_a2c_stage_slice_of_folders_written_before_the_setting():
    fixed = a2c_slice(ExperimentConfig(name="x"))
    assert "option_order" not in fixed["a2c"]
    cyclic = ExperimentConfig(name="x", ask_to_choose=A2CConfig(option_order="cyclic"))
    assert a2c_slice(cyclic)["a2c"]["option_order"] == "cyclic"  # another order reruns Ask-to-Choose


def test_an_unknown_order_is_refused_naming_the_orders():
    with pytest.raises(ValidationError, match="'fixed', 'shuffled' or 'cyclic'"):
        A2CConfig.model_validate({"option_order": "random"})


def test_the_wrapper_asks_the_rank_prompts_in_the_configured_order():
    generator = build_generator(GeneratorConfig(backend="scripted", model="scripted:Paris|Rome|Oslo|1",
                                                cache=None))
    settings: dict[str, Any] = {"temperatures": (0.5, 1.0), "samples": 3}
    fixed = AskToChoose(generator, **settings).answer("What is the capital of Norway?")
    cyclic = AskToChoose(generator, a2c=A2CConfig(option_order="cyclic"), **settings).answer(
        "What is the capital of Norway?")
    assert fixed.candidates == cyclic.candidates  # the same answers, shown in other orders
    assert all(c.order is None for c in fixed.choices)
    moved = [c for c in cyclic.choices if c.order is not None]
    assert moved and all(c.order == _rotation(c.slot, len(c.options)) for c in moved)


def test_a_calibration_recorded_without_the_setting_fits_fixed_only():
    made = calibration()
    old = {**made.run.settings, "ask_to_choose": {
        k: v for k, v in made.run.settings["ask_to_choose"].items() if k != "option_order"}}
    former = made.model_copy(update={"run": made.run.model_copy(update={"settings": old})})
    fixed = answer_settings(SETTINGS, "")
    assert settings_mismatch(former, "scripted", fixed) is None
    shuffled = override(fixed, {"ask_to_choose": {"option_order": "shuffled"}})
    mismatch = settings_mismatch(former, "scripted", shuffled)
    assert mismatch is not None and "ask_to_choose.option_order" in mismatch


# -- a2c serve -------------------------------------------------------------------------------------------

def test_a_request_may_set_the_order_and_a_bad_one_is_a_400_naming_the_key():
    model = "scripted:Paris|Rome|Oslo"
    app = app_of(model)
    question = "What is the capital of Norway?"

    async def scenario(client: httpx.AsyncClient) -> list[httpx.Response]:
        bodies = ({}, {"a2c": {"ask_to_choose": {"option_order": "cyclic"}}},
                  {"a2c": {"ask_to_choose": {"option_order": "random"}}},
                  {"a2c": {"ask_to_choose": {"option_order": 1}}})
        return [await client.post("/v1/chat/completions", json={**chat(question, **body), "model": model})
                for body in bodies]

    default, cyclic, unknown, number = against(app, scenario)
    assert default.status_code == cyclic.status_code == 200
    proof, moved = default.json()["a2c"], cyclic.json()["a2c"]
    assert proof["settings"]["ask_to_choose"]["option_order"] == "fixed"
    assert moved["settings"]["ask_to_choose"]["option_order"] == "cyclic"
    assert all(c["order"] is None for c in proof["choices"])
    rotated = [c for c in moved["choices"] if c["order"] is not None]
    assert rotated and all(c["order"] == _rotation(c["slot"], len(c["options"]))
                           for c in rotated)
    for refused in (unknown, number):
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["param"] == "a2c.ask_to_choose.option_order" and "fixed" in error["message"]
