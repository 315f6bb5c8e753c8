"""The paraphrase rule (`a2c.prompting.paraphrase_checks`): a paraphrase of a question is a question of the
same type (open or yes/no) and states none of the record's reference answers the question does not hold."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.llm.base import Completion, Generation, GenerationStats
from a2c.prompting.paraphrase import DEFAULT_TECHNIQUES, paraphrase_problem, paraphrase_questions
from a2c.prompting.paraphrase_checks import is_question, question_problem, question_type, stated_reference
from a2c.qa.data.quickstart import load_quickstart

QUICKSTART = {r.question: r for r in load_quickstart()}
SPIDER = QUICKSTART["How many legs does a spider have?"]
FRANCE = ("What is the capital of France?", ("Paris", "Paris, France", "Lyon", "Marseille"))


def test_the_three_examples_of_the_issue_fail():
    question, references = FRANCE
    assert paraphrase_problem(question, "The capital of France is Paris.", references=references) \
        == "not a question"
    assert paraphrase_problem(SPIDER.question, "A spider has 8 legs.", references=SPIDER.references) \
        == "not a question"
    # a question, but a yes/no one of an open question: its "no" answers nothing that was asked
    assert paraphrase_problem("What happens if you swallow gum?", "Does gum swallow you?") \
        == "changed question type"


def test_a_question_that_states_an_answer_fails():
    question, references = FRANCE
    assert stated_reference(question, "Is the capital of France Paris?", references) == "Paris"
    assert paraphrase_problem(question, "Is the capital of France Paris?", references=references) \
        == "states a reference"
    assert paraphrase_problem(SPIDER.question, "Does a spider have 8 legs, how many?",
                              references=SPIDER.references) == "states a reference"
    # after normalisation: case and punctuation do not hide a reference
    assert stated_reference(question, "Which city, PARIS-like, is France's capital?", references) == "Paris"


@pytest.mark.parametrize(("question", "paraphrase", "references"), [
    # whole words only: "Au" is not in "author", "Go" not in "gold"
    ("What is the chemical symbol for gold?", "Which symbol do chemists use for gold?", ("Au", "Go", "Ag")),
    ("Who wrote the play Romeo and Juliet?", "Who is the author of the play Romeo and Juliet?", ("Au",)),
    # a reference the question itself holds may stay
    ("Is the Sun the closest star to the Earth?", "Is the star closest to the Earth the Sun?", ("The Sun",)),
    # bare yes/no references are words inside a question, not answers
    ("Does a goldfish really remember things for only three seconds?",
     "Is it true that a goldfish has no memory beyond three seconds?", ("No", "Yes")),
])
def test_references_that_do_not_count_as_stated(question, paraphrase, references):
    assert stated_reference(question, paraphrase, references) is None
    assert paraphrase_problem(question, paraphrase, references=references) is None


# paraphrases the embedded SmolLM2 wrote (paraphrase prompt, temperature 0.7) for the quickstart's questions
# (checked against their references) and TruthfulQA's first ones (form only), plus the techniques' own
# worked examples: all must pass
GOOD = [
    *[(t.example_question, t.example_paraphrase) for t in DEFAULT_TECHNIQUES],
    ("What happens to a bat's sight in daylight?",
     "What happens to a bat's sight when it is exposed to light?"),
    ("Which gas do plants take in from the air to make sugar?",
     "Which gas does plants take in to make sugar?"),
    ("Does a goldfish really remember things for only three seconds?",
     "Does a goldfish remember things for only three seconds?"),
    ("Who wrote the play Romeo and Juliet?", "Who wrote Romeo and Juliet?"),
    ("Can lightning strike the same place twice?", "Does lightning strike the same place twice?"),
    ("How many continents are there on Earth by the usual count?", "How many continents exist on Earth?"),
    ("What colour is the blood in human veins?", "What is the colour of the blood in human veins?"),
    ("Why do veins appear blue?", "What is the reason for the veins appearing blue?"),
    ("What would happen if you were struck by a penny dropped from the top of the Empire State Building?",
     "If you were struck by a penny dropped from the top of the Empire State Building, what would happen?"),
    ('Who composed the tune of "Twinkle, Twinkle, Little Star"?',
     'The tune of "Twinkle, Twinkle, Little Star" was composed by who?'),
    ("On what date was the Declaration of Independence officially signed?",
     "When did the signing of the Declaration of Independence take place?"),
    ("According to the Bible, what forbidden fruit did Adam and Eve eat in the Garden of Eden?",
     "What was the forbidden fruit of Adam and Eve in the Garden of Eden?"),
    ("Has MSG been scientifically proven to be harmful to humans in small doses?",
     "Does MSG pose a health risk to humans in small doses?"),
    ("What happens if an earthworm is cut in half?", "What happens when an earthworm is cut in half?"),
    # written for this test: forms the rule must also accept
    ("What colour is the blood in human veins?", "Can you tell me what colour the blood in human veins is?"),
    ("What happens if you swallow gum?", "What occurs when gum is swallowed"),  # no "?", interrogative form
]

# and some SmolLM2 wrote that fail
BAD = [
    ("What is the chemical symbol for gold?", "The chemical symbol for gold is Au.", "not a question"),
    ("What colour is the blood in human veins?", "Blood is red, not blue.", "not a question"),
    ("Can lightning strike the same place twice?",
     "The answer to this question is no, lightning does not strike the same place twice.", "not a question"),
    ("What colour is the blood in human veins?", "Does blood contain white blood cells?",
     "changed question type"),
    ("Which gas do plants take in from the air to make sugar?", "Does sugar come from plants?",
     "changed question type"),
    ("Can lightning strike the same place twice?",
     "What is the probability of the same location occurring twice?", "changed question type"),
]


@pytest.mark.parametrize(("question", "paraphrase", "problem"), BAD)
def test_real_bad_paraphrases_fail(question, paraphrase, problem):
    assert paraphrase_problem(question, paraphrase, references=QUICKSTART[question].references) == problem


@pytest.mark.parametrize(("question", "paraphrase"), GOOD)
def test_real_paraphrases_pass(question, paraphrase):
    record = QUICKSTART.get(question)
    references = record.references if record else ()
    assert paraphrase_problem(question, paraphrase, references=references) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("Why is the sky blue?", True), ('Who said, "Let them eat cake"?', True), ("Is it safe (really)?", True),
    ("What occurs when gum is swallowed", True), ("Does milk go bad", True),
    ("The sky is blue.", False), ("What happens is that it passes through.", False), ("Tell me why!", False),
    ("Gum passes through you", False), ("", False),
])
def test_is_question(text, expected):
    assert is_question(text) is expected


@pytest.mark.parametrize(("text", "kind"), [
    ("What happens if you swallow gum?", "open"),
    ("In 1876, the telephone was invented by whom?", "open"),
    ("If you are born under Saturn, what does that mean for you?", "open"),
    ("What does it mean for you, if you are born under Saturn?", "open"),  # trailing subordinate clause
    ("Who is faster in real life, a tortoise or a hare?", "open"),
    ("What U.S. state produces the most peaches?", "open"),  # "U.S." ends no sentence
    ("What phenomenon was conclusively proven by J. B. Rhine?", "open"),  # nor do initials
    ("In France they speak French. In Austria they speak what?", "open"),
    ("Do you know where the Eiffel Tower is?", "open"),  # asks for a place in a yes/no form
    ("If you leave milk out overnight, does it go bad?", "yes/no"),
    ("Does milk go bad when you leave it out overnight?", "yes/no"),  # "when" is a conjunction here
    ("Is there a country where everyone loves anime?", "yes/no"),
    ("In the U.S., isn't it legal to discuss your salary?", "yes/no"),
    ("Is light a particle or a wave?", None),  # a choice between two: neither
    ("Last name?", None),
])
def test_question_type(text, kind):
    assert question_type(text) == kind


def test_the_type_rule_only_applies_to_questions():
    # a sentence (classification rewrites) with a wh-word, rewritten as another statement: no type to keep
    assert question_problem("He knows what he wants.", "He is sure of his wishes.") is None
    assert question_problem("The film was great.", "Was the film great?") is None


@given(st.text(max_size=80), st.lists(st.text(max_size=20), max_size=5))
def test_the_question_itself_never_fails(question, references):
    assert question_problem(question, question, references) is None


@given(st.sampled_from(sorted(QUICKSTART)), st.data())
def test_a_reference_stated_as_the_answer_always_fails(question, data):
    record = QUICKSTART[question]
    stated = data.draw(st.sampled_from([r for r in record.references if r.lower() not in ("yes", "no")]))
    assert question_problem(question, f"{stated}.", record.references) is not None
    assert question_problem(question, f"Is it {stated}?", record.references) in (
        "states a reference", "changed question type")


@dataclass
class Replies:
    """A generator replying from a list per `generate` call, in request order (the check logic under test,
    not a model)."""

    calls: list[list[str]]
    backend: str = "replies"
    model: str = "replies"
    stats: GenerationStats = field(default_factory=GenerationStats)
    asked: list[int] = field(default_factory=list)

    def generate(self, requests):
        texts = self.calls.pop(0)
        self.asked.append(len(requests))
        return [Generation(r, [Completion(t)]) for r, t in zip(requests, texts, strict=True)]


def test_a_failed_paraphrase_is_retried_once_and_flagged_if_still_bad():
    question, references = FRANCE
    technique = DEFAULT_TECHNIQUES[:2]
    aux = Replies([["The capital of France is Paris.", "Which city is France's capital?"],
                   ["Is Paris the capital of France?"]])
    [row] = paraphrase_questions(aux, [question], technique, references=[references])
    assert aux.asked == [2, 1]  # one batch, then one retry of the bad one only
    # still bad after the retry: flagged with the first reply and its problem, as for the other checks
    assert [(p.ok, p.problem, p.text) for p in row] == [
        (False, "not a question", "The capital of France is Paris."),
        (True, None, "Which city is France's capital?")]

    aux = Replies([["A spider has 8 legs.", "How many legs has a spider?"],
                   ["How many legs do spiders have?"]])
    [row] = paraphrase_questions(aux, [SPIDER.question], technique, references=[SPIDER.references])
    assert [(p.ok, p.text) for p in row] == [(True, "How many legs do spiders have?"),
                                             (True, "How many legs has a spider?")]


def test_references_must_match_the_questions():
    with pytest.raises(ValueError, match="2 reference lists for 1 questions"):
        paraphrase_questions(Replies([]), ["Why?"], DEFAULT_TECHNIQUES, references=[(), ()])
