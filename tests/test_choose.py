"""Ask-to-Choose pure parts: merging candidates into options, parsing replies, mapping choices back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.choose import (
    DEFAULT_IDK_TEXT,
    ParsedReply,
    RankChoice,
    RankItem,
    RankOptions,
    parse_reply,
    rank_request,
    summarize,
)
from a2c.common.seeds import stable_seed
from a2c.common.text import normalize
from a2c.qa.rows import GenerationRow

CAPITALS = RankOptions.build(["Canberra", "Sydney", "canberra.", "", "  Melbourne "])


def test_duplicates_merge_and_map_back():
    assert CAPITALS.options == ("Canberra", "Sydney", "Melbourne")
    assert CAPITALS.candidate_option == (0, 1, 0, None, 2)
    assert CAPITALS.candidates_of(0) == (0, 2)
    assert CAPITALS.idk_index == 3
    assert CAPITALS.render().splitlines() == ["1. Canberra", "2. Sydney", "3. Melbourne",
                                              "4. Don't know the correct answer"]


def test_the_dont_know_option_is_configurable_and_shown_in_the_shots_too():
    options = RankOptions.build(["Canberra", "Sydney"], idk_text="None of these")
    assert options.render().splitlines()[-1] == "3. None of these"
    assert parse_reply("None of these.", options) == ParsedReply(2, "idk")
    assert _choice(options, "3").text == "None of these"
    turns = rank_request("Which city?", options, temperature=0.0, top_p=0.9, seed=0).messages
    # the few-shot examples list the same last option as the real question
    shots = [t.content for t in turns if t.role == "user"]
    assert all("None of these" in s for s in shots) and not any("Don't know" in s for s in shots)


@pytest.mark.parametrize(("reply", "option", "method"), [
    ("2", 1, "number"),
    (" 3.", 2, "number"),
    ("(1)", 0, "number"),
    ("2. Sydney", 1, "number"),
    ("Option 3", 2, "number"),
    ("I pick option 1 because", 0, "number"),
    ("The answer is 2", 1, "number"),
    ("Answer: C", 2, "letter"),
    ("B", 1, "letter"),
    ("b)", 1, "letter"),
    ("(A) Canberra", 0, "letter"),
    ("Melbourne", 2, "text"),
    ("sydney!", 1, "text"),
    ("It is Melbourne, I think", 2, "text"),
    ("4", 3, "number"),
    ("I don't know", 3, "idk"),
    ("I don't know the correct answer.", 3, "idk"),
    ("1\nactually 2", 0, "number"),
])
def test_reply_parsing(reply, option, method):
    assert parse_reply(reply, CAPITALS) == ParsedReply(option, method)


@pytest.mark.parametrize("reply", ["", "   ", "7", "Option 9", "Hmm, hard to say", "Canberra or Sydney",
                                   "Z", "\n\nsee below\n2"])
def test_unrecognisable_replies_stay_unparsed(reply):
    # the last case: only the first non-blank line counts
    parsed = parse_reply(reply, CAPITALS)
    assert parsed == ParsedReply(None, "unparsed")
    assert not parsed.parsed


def test_option_text_that_starts_with_a_number_is_not_an_option_number():
    legs = RankOptions.build(["8 legs", "2 legs", "Six"])
    assert parse_reply("2 legs", legs) == ParsedReply(1, "text")
    assert parse_reply("2", legs) == ParsedReply(1, "number")
    # a bare number out of range that equals an option's text is that option
    numbers = RankOptions.build(["8", "6"])
    assert parse_reply("8", numbers) == ParsedReply(0, "text")


alnum_text = st.text(alphabet=st.characters(categories=["L", "N", "Zs"]), min_size=1, max_size=20)


@given(st.lists(alnum_text, min_size=1, max_size=8))
def test_every_option_number_and_text_maps_back(candidates):
    options = RankOptions.build(candidates)
    for i, text in enumerate(options.options):
        assert parse_reply(str(i + 1), options).option == i
        assert parse_reply(f"Option {i + 1}", options).option == i
        # the text maps to its own option unless it is a bare number naming another option
        if not normalize(text).isdigit():
            assert parse_reply(text, options).option == i
    assert parse_reply(str(options.idk_index + 1), options).option == options.idk_index
    assert parse_reply(str(options.idk_index + 2), options).option in {None, *range(len(options.options))}
    for i, c in enumerate(candidates):
        o = options.candidate_option[i]
        if o is None:
            assert not normalize(c)
        else:
            assert normalize(options.options[o]) == normalize(c)


def _choice(options: RankOptions, reply: str, slot: int = 0) -> RankChoice:
    item = RankItem(0, "paraphrase", slot, "Q?", options, 0.0, seed=1)
    return RankChoice(item, reply, parse_reply(reply, options))


def test_choice_text_and_candidate_mapping():
    assert _choice(CAPITALS, "1").text == "Canberra"
    assert _choice(CAPITALS, "1").candidate == 0
    assert _choice(CAPITALS, "3").candidate == 4
    assert _choice(CAPITALS, "4").text == DEFAULT_IDK_TEXT
    assert _choice(CAPITALS, "4").candidate is None
    assert _choice(CAPITALS, "no idea at all").text is None


def _answers(*texts: str) -> list[GenerationRow]:
    return [GenerationRow(id="q", source="paraphrase", slot=i, technique="synonyms", temperature=0.0,
                          asked=f"Q{i}?", long=f"Long {text}", short=text) for i, text in enumerate(texts)]


def test_summary_votes_and_counts_unparsed():
    choices = [_choice(CAPITALS, r, i).row("q") for i, r in enumerate(["2", "Sydney", "1", "??", "4"])]
    result = summarize("Q?", _answers("Canberra", "Sydney", "canberra.", "", "Melbourne"), choices)
    assert result.answer == "Sydney"
    assert result.candidates == ["Canberra", "Sydney", "canberra.", "", "Melbourne"]
    assert result.asked == ["Q0?", "Q1?", "Q2?", "Q3?", "Q4?"]
    assert summarize("Q?", _answers("A"), [], answer_field="long").candidates == ["Long A"]
    assert result.chosen_texts == ["Sydney", "Sydney", "Canberra", DEFAULT_IDK_TEXT]
    assert result.consistency["unparsed"] == 1
    assert result.consistency["vote_share"] == pytest.approx(0.5)
    # 2 agreeing ordered pairs out of 4*3
    assert result.consistency["choices_lexical"] == pytest.approx(2 / 12)
    nothing = summarize("Q?", _answers("a"), [_choice(CAPITALS, "??").row("q")])
    assert nothing.answer is None and nothing.consistency["vote_share"] is None
    assert nothing.consistency["candidates_lexical"] is None


def test_rank_request_renders_the_options_and_a_short_budget():
    request = rank_request("Which city is the capital?", CAPITALS, temperature=0.0, top_p=0.9, seed=3)
    last = request.messages[-1].content
    assert "Which city is the capital?" in last and f"4. {DEFAULT_IDK_TEXT}" in last
    assert request.max_tokens == 8 and request.top_p == 1.0 and request.seed == 3
    assert rank_request("Q", CAPITALS, temperature=0.7, top_p=0.9, seed=3).top_p == 0.9


def test_stable_seed_is_stable_and_distinguishes_parts():
    # pinned: a changed seed would make every request of an existing run miss the request cache
    assert stable_seed(0, "Why?", "paraphrase", 1) == 793536330
    assert stable_seed(3, "Q", 0.5, 2, bits=31) == 600086023
    assert stable_seed(0, 1, "paraphrase", 2) == stable_seed(0, 1, "paraphrase", 2)
    assert len({stable_seed(0, q, s, j) for q in range(5) for s in ("paraphrase", "temperature")
                for j in range(4)}) == 40


def test_no_candidates_means_no_rank_prompts():
    from a2c.choose import rank_items

    assert rank_items(0, "Q?", "paraphrase", ["q1", "q2"], ["", "  "], [0.0, 0.0], seed=0) == []
    items = rank_items(3, "Q?", "temperature", ["q1", "q2"], ["A", "a."], [0.5, 1.0], seed=0)
    assert [(i.question_index, i.slot, i.temperature) for i in items] == [(3, 0, 0.5), (3, 1, 1.0)]
    assert items[0].options.options == ("A",) and items[0].seed != items[1].seed
    # seeds follow the question, not its position in a batch: chunking cannot change a sample
    moved = rank_items(0, "Q?", "temperature", ["q1", "q2"], ["A", "a."], [0.5, 1.0], seed=0)
    assert [i.seed for i in moved] == [i.seed for i in items]


@pytest.mark.slow
def test_algorithm_1_on_the_embedded_model(smollm2):
    from a2c.choose import ask_to_choose

    questions = ["How many legs does a spider have?"]
    # one paraphrase context lost its answer: still one rank prompt per context (4), one per temperature (2)
    y_c = [["Eight", "8 legs", "eight."]]
    y_t = [["Eight legs", "Six"]]
    choices = ask_to_choose(smollm2, questions, y_c, y_t, [[0.5, 1.0]], seed=0)[0]
    assert [(c.item.source, c.item.slot) for c in choices] == [
        ("paraphrase", 0), ("paraphrase", 1), ("paraphrase", 2), ("paraphrase", 3),
        ("temperature", 0), ("temperature", 1)]
    assert choices[0].item.options.options == ("Eight", "8 legs")
    assert [c.item.temperature for c in choices[4:]] == [0.5, 1.0]
    for c in choices:
        assert c.parsed == parse_reply(c.reply, c.item.options)
        assert c.text is None or c.text in (*c.item.options.options, DEFAULT_IDK_TEXT)
        assert c.item.shown_question.strip()
