"""Checks that a paraphrase still asks what the question asks, in terms of its surface form only.

A statement ("The capital of France is Paris.") or a question that names an answer lets the model agree
with the text instead of answering the question, which inflates consistency; an open question turned into a
yes/no one ("What happens if you swallow gum?" → "Does gum swallow you?") is answered "no", which is no
answer to the original. The rules, on words after `a2c.common.text.normalize`:

- *A question* ends with "?" (closing quotes and brackets aside), or, without a closing "." or "!", its last
  sentence opens with an interrogative word: a wh-word (what, which, who, whom, whose, when, where, why, how)
  or an auxiliary that opens a yes/no question (is, does, can, …).
- *Its type*, read from the comma-separated clauses of the last sentence from its end, skipping those
  after the first that open with a subordinator ("…, if you swallow it?"); the first clause that tells
  decides: *yes/no* when it opens with an auxiliary (except "Can you tell me what…"-style requests, which
  are *open*, and "Is it A or B?", which tells neither), *open* when it holds a wh-word ("… invented by
  whom?"). When no clause tells, the type is unknown and not compared.
- *A reference it states*: a reference answer whose words appear as a run of whole words in the paraphrase
  but not in the question. Bare "yes" and "no" are exempt: inside a question they are words ("Is there no
  cure?"), not answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from a2c.common.text import normalize

QuestionType = Literal["open", "yes/no"]

# which checks a paraphrase must pass; stages that keep paraphrases key on it, so a run made under older
# checks makes its paraphrases again (the request cache serves every request it made before)
RULE_VERSION = 2  # 1: form only (empty, identical, multi-line, rambling); 2: + question, type, references
WH_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "why", "how"})
# words that open a yes/no question; negated forms as `normalize` leaves them ("isn't" → "isn t")
AUXILIARIES = frozenset({
    "am", "is", "are", "was", "were", "do", "does", "did", "have", "has", "had", "can", "could", "will",
    "would", "shall", "should", "may", "might", "must", "cannot", "isn", "aren", "wasn", "weren", "don",
    "doesn", "didn", "haven", "hasn", "hadn", "couldn", "won", "wouldn", "shouldn", "mustn",
})
# a clause opening with one of these is subordinate ("…, if you swallow it?"): the main clause is before it
_SUBORDINATORS = frozenset({"if", "when", "whenever", "while", "because", "since", "although", "though",
                           "after", "before", "unless", "once", "until", "as", "even"})
# "Can you tell me what…", "Do you know where…": a yes/no form asking for an open answer
_ASKING_VERBS = frozenset({"tell", "know", "explain", "say", "describe", "name", "list", "guess"})
_NOT_REPLIES = frozenset({"yes", "no"})

_CLOSERS = "\"'”’»)]} \t\n"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_INITIAL = re.compile(r"\b\w\.$")  # "J. B. Rhine": a single letter and a full stop end no sentence


def _last_sentence(text: str) -> str:
    """The text after the last sentence end; a piece that opens in lower case ("the U.S. state") or follows
    an initial is no new sentence."""
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(text.strip()):
        letter = next((ch for ch in piece if ch.isalpha()), "")
        if sentences and (letter.islower() or _INITIAL.search(sentences[-1])):
            sentences[-1] += " " + piece
        elif normalize(piece):
            sentences.append(piece)
    return sentences[-1] if sentences else ""


def is_question(text: str) -> bool:
    """Whether `text` is a question: a final "?", or an interrogative opening without a final "." / "!"."""
    stripped = text.rstrip(_CLOSERS)
    if stripped.endswith("?"):
        return True
    if stripped.endswith((".", "!")):
        return False
    words = normalize(_last_sentence(text)).split()
    return bool(words) and (words[0] in WH_WORDS or words[0] in AUXILIARIES)


def _clause_type(words: list[str]) -> QuestionType | None:
    if words[0] in AUXILIARIES and "or" in words:
        return None  # "Is it A or B?" asks for one of the two: neither yes/no nor open
    if words[0] in AUXILIARIES:
        asks_open = (len(words) > 2 and words[1] == "you" and words[2] in _ASKING_VERBS
                     and any(w in WH_WORDS for w in words[3:]))
        return "open" if asks_open else "yes/no"
    return "open" if any(w in WH_WORDS for w in words) else None


def question_type(text: str) -> QuestionType | None:
    """Open or yes/no, from the last sentence's clauses read from its end (the first that tells, skipping
    subordinate ones after the first); None when none tells."""
    clauses = [words for c in _last_sentence(text).split(",") if (words := normalize(c).split())]
    for index in reversed(range(len(clauses))):
        if index > 0 and clauses[index][0] in _SUBORDINATORS:
            continue
        if (kind := _clause_type(clauses[index])) is not None:
            return kind
    return None


def _contains(words: str, phrase: str) -> bool:
    return f" {phrase} " in f" {words} "


def stated_reference(question: str, text: str, references: Iterable[str]) -> str | None:
    """The first reference whose words `text` holds and `question` does not (bare yes/no exempt), or None."""
    said, asked = normalize(text), normalize(question)
    for reference in references:
        words = normalize(reference)
        if words and words not in _NOT_REPLIES and _contains(said, words) and not _contains(asked, words):
            return reference
    return None


def question_problem(question: str, text: str, references: Iterable[str] = ()) -> str | None:
    """Why `text` does not ask what `question` asks, or None: "not a question" (the question is one and the
    text is not), "states a reference" (a reference answer the question does not hold), "changed question
    type" (open ↔ yes/no, when the question is one and the form of both tells)."""
    asks = is_question(question)
    if asks and not is_question(text):
        return "not a question"
    if stated_reference(question, text, references) is not None:
        return "states a reference"
    before, after = (question_type(question), question_type(text)) if asks else (None, None)
    if before is not None and after is not None and before != after:
        return "changed question type"
    return None
