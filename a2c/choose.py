"""Ask-to-Choose as a decoding wrapper: the public face of the QA wing's Algorithm 1.

`AskToChoose(generator).answer(question)` returns the chosen answer with its candidates, every rank prompt
and simple consistency figures; for the same question, seed and settings it asks exactly the prompts
`a2c run` asks. The code lives in the wing (`a2c.qa.wrapper`, `a2c.qa.choice`, `a2c.qa.rank`); this module
keeps the names users import.
"""

from a2c.qa.choice import Choice, Decision, JudgedSet, summarize
from a2c.qa.rank import (
    DEFAULT_IDK_TEXT,
    ParsedReply,
    RankChoice,
    RankItem,
    RankOptions,
    ask_to_choose,
    choose,
    majority_vote,
    parse_reply,
    rank_items,
    rank_request,
)
from a2c.qa.wrapper import AskToChoose, CalibrationMismatch

__all__ = ["DEFAULT_IDK_TEXT", "AskToChoose", "CalibrationMismatch", "Choice", "Decision", "JudgedSet",
           "ParsedReply", "RankChoice", "RankItem", "RankOptions", "ask_to_choose", "choose", "majority_vote",
           "parse_reply", "rank_items", "rank_request", "summarize"]
