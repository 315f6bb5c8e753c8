"""Ask-to-Choose (SPEC §5, Algorithm 1), the kernel: the model picks among its own candidate answers.

Pure parts first (option building, reply parsing, the majority vote), then the batched algorithm over a
whole dataset. A reply that names no option is kept as *unparsed*: it is counted and left out of the chosen
set, never mapped to a guess. The decoding wrapper `a2c.choose.AskToChoose` runs this through the QA stages.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from a2c.common.seeds import stable_seed
from a2c.common.text import normalize
from a2c.llm.base import GenerationRequest, Generator
from a2c.prompting.paraphrase import DEFAULT_TECHNIQUES, Technique, paraphrase_questions
from a2c.prompting.prompts import load_template, with_context
from a2c.qa.idk import DEFAULT_IDK_TEXT
from a2c.qa.option_order import OptionOrder, shown_order
from a2c.qa.rows import ChoiceRow, ParseMethod, Source


@dataclass(frozen=True)
class RankOptions:
    """Candidates as the options of one rank prompt, duplicates merged, in the order the prompt lists them.

    `options` holds each distinct candidate once (first spelling seen); `candidate_option[i]` is the
    option candidate i was merged into, or None for an empty candidate (nothing to show). The
    "I don't know" option (`idk_text`) is always shown last, after `options`. `order` is None when the
    options are listed as first seen (`build`); after `arranged`, `order[k]` is the first-seen index of
    `options[k]`, so positions map back to that order.
    """

    candidates: tuple[str, ...]
    options: tuple[str, ...]
    candidate_option: tuple[int | None, ...]
    idk_text: str = DEFAULT_IDK_TEXT
    order: tuple[int, ...] | None = None

    @classmethod
    def build(cls, candidates: Sequence[str], idk_text: str = DEFAULT_IDK_TEXT) -> RankOptions:
        """The options of one source's candidates, equal texts (after normalisation) shown once.

        Args:
            candidates: the candidate answers, in the order they were made (an empty one shows nothing).
            idk_text: the "I don't know" option's text.

        Returns:
            The options in first-seen order, with each candidate's option.
        """
        seen: dict[str, int] = {}
        options: list[str] = []
        mapping: list[int | None] = []
        for text in candidates:
            key = normalize(text)
            if not key:
                mapping.append(None)
                continue
            if key not in seen:
                seen[key] = len(options)
                options.append(text.strip())
            mapping.append(seen[key])
        return cls(tuple(candidates), tuple(options), tuple(mapping), idk_text)

    def arranged(self, order: Sequence[int]) -> RankOptions:
        """These options listed in another order: `order[k]` is the first-seen index shown at position k.

        The identity (first-seen order) returns the options unchanged, so `fixed` prompts are today's.

        Args:
          order: a permutation of `range(len(options))`, e.g. from `a2c.qa.option_order.shown_order`.

        Returns:
          Options whose `options`, `candidate_option` and `order` follow the new order.
        """
        if self.order is not None:
            raise ValueError("options already arranged: arrange the first-seen options")
        if sorted(order) != list(range(len(self.options))):
            raise ValueError(f"{list(order)} is not a permutation of the {len(self.options)} options")
        if list(order) == list(range(len(self.options))):
            return self
        position = {first: k for k, first in enumerate(order)}
        return RankOptions(self.candidates, tuple(self.options[first] for first in order),
                           tuple(None if o is None else position[o] for o in self.candidate_option),
                           self.idk_text, tuple(order))

    @property
    def idk_index(self) -> int:
        """The 0-based index of the "I don't know" option (shown as number len(options) + 1)."""
        return len(self.options)

    def render(self) -> str:
        """The numbered list the rank prompt shows, "I don't know" last, each option on one line.

        Returns:
            One `N. text` line per option, the options' inner whitespace collapsed.
        """
        shown = (*self.options, self.idk_text)
        lines = [f"{i + 1}. {' '.join(text.split())}" for i, text in enumerate(shown)]
        return "\n".join(lines)

    def candidates_of(self, option: int) -> tuple[int, ...]:
        """The candidate indices merged into one option: where a choice maps back to.

        Args:
            option: a 0-based option index.

        Returns:
            The indices of the candidates shown as that option, in order (none for "I don't know").
        """
        return tuple(i for i, o in enumerate(self.candidate_option) if o == option)


@dataclass(frozen=True)
class ParsedReply:
    """Which option a reply names: `option` is 0-based (idk_index for "I don't know"), None if unparsed."""

    option: int | None
    method: ParseMethod

    @property
    def parsed(self) -> bool:
        return self.option is not None


_KEYWORD = re.compile(r"\b(?:option|choice|answer)(?:\s+is)?\s*(?:number|no\.?)?\s*[:#]?\s*\(?"
                      r"(\d+|[a-z])\)?(?![\w'])", re.IGNORECASE)
_LEADING_NUMBER = re.compile(r"^\W{0,3}?(\d+)(?:[).:\]]|\s|$)")
_LEADING_LETTER = re.compile(r"^\(?([A-Za-z])(?:[).:\]](?:\s|$)|\)?$)")
_IDK = re.compile(r"\b(?:do\s*n[o']?t|dont|does\s*n[o']?t)\s+know\b|\bnot\s+sure\b", re.IGNORECASE)


def _index_of(token: str, n_choices: int) -> int | None:
    index = int(token) - 1 if token.isdigit() else ord(token.lower()) - ord("a")
    return index if 0 <= index < n_choices else None


def _exact_text(said: str, options: RankOptions) -> int | None:
    matches = [i for i, o in enumerate(options.options) if normalize(o) == said]
    return matches[0] if len(matches) == 1 else None


def _contained_text(said: str, options: RankOptions) -> int | None:
    """The only option whose whole (normalized) text appears inside the reply."""
    padded = f" {said} "
    hits = [i for i, o in enumerate(options.options) if normalize(o) and f" {normalize(o)} " in padded]
    return hits[0] if len(hits) == 1 else None


def parse_reply(reply: str, options: RankOptions) -> ParsedReply:
    """Map a rank-prompt reply to an option: a number, a letter, "Option 3", the option's text, or nothing.

    Order: a bare number is the option number (that is what the prompt asks for); a reply equal to one
    option's text is that option ("2 legs" is not option 2); then a leading number or letter, "Option 3" /
    "the answer is B", an option's text inside the reply, and "I don't know". Numbers out of range are
    never guessed at. Only the first line counts: later lines are the model rambling on.

    Args:
        reply: the model's reply to the rank prompt.
        options: the options the prompt showed.

    Returns:
        The 0-based option named (`options.idk_index` for "I don't know"), or None, and how it was read.
    """
    lines = reply.strip().splitlines()
    first = lines[0].strip() if lines else ""
    said = normalize(first)
    if not said:
        return ParsedReply(None, "unparsed")
    n_choices = len(options.options) + 1
    if said.isdigit():
        index = _index_of(said, n_choices)
        if index is not None:
            return ParsedReply(index, "number")
    exact = _exact_text(said, options)
    if exact is not None:
        return ParsedReply(exact, "text")
    for pattern in (_LEADING_NUMBER, _KEYWORD, _LEADING_LETTER):
        match = pattern.search(first)
        if match:
            index = _index_of(match.group(1), n_choices)
            if index is not None:
                return ParsedReply(index, "letter" if match.group(1).isalpha() else "number")
    contained = _contained_text(said, options)
    if contained is not None:
        return ParsedReply(contained, "text")
    if said == normalize(options.idk_text) or _IDK.search(first):
        return ParsedReply(options.idk_index, "idk")
    return ParsedReply(None, "unparsed")


def rank_request(question: str, options: RankOptions, *, temperature: float, top_p: float, seed: int | None,
                 max_tokens: int = 8, template: str = "rank", passage: str = "") -> GenerationRequest:
    """One rank prompt as chat turns; a short reply budget, since one option number is wanted.

    Args:
        question: the question shown (q or a paraphrase of it).
        options: the options listed under it.
        temperature: the sampling temperature of the reply.
        top_p: nucleus sampling's p (1.0 at temperature 0, where it does nothing).
        seed: the sampling seed; None leaves it to the backend.
        max_tokens: the reply's token budget.
        template: the prompt template's name (or `.yaml` path).
        passage: the text the question is asked with (`QARecord.context`), shown before it; "" for none.

    Returns:
        The request, stopping at the first newline.
    """
    messages = with_context(load_template(template).messages(question=question, options=options.render(),
                                                             idk=options.idk_text), passage)
    return GenerationRequest(messages=messages, temperature=temperature,
                             top_p=top_p if temperature > 0 else 1.0, max_tokens=max_tokens, seed=seed,
                             stop=("\n",))


@dataclass(frozen=True)
class RankItem:
    """One rank prompt of Algorithm 1: question `q̃` shown with the candidates of one source."""

    question_index: int
    source: Source
    slot: int  # the context c_i or temperature t_j this choice stands for
    shown_question: str
    options: RankOptions
    temperature: float
    seed: int
    passage: str = ""  # what the question is asked with (`QARecord.context`), shown before it


@dataclass(frozen=True)
class RankChoice:
    """The parsed reply to one rank prompt and the text it maps back to (None when unparsed)."""

    item: RankItem
    reply: str
    parsed: ParsedReply

    @property
    def text(self) -> str | None:
        if self.parsed.option is None:
            return None
        if self.parsed.option == self.item.options.idk_index:
            return self.item.options.idk_text
        return self.item.options.options[self.parsed.option]

    @property
    def candidate(self) -> int | None:
        """The first candidate merged into the chosen option (None for unparsed or "I don't know")."""
        if self.parsed.option is None or self.parsed.option == self.item.options.idk_index:
            return None
        return self.item.options.candidates_of(self.parsed.option)[0]

    def row(self, question_id: str) -> ChoiceRow:
        """What `choices.jsonl` keeps of this choice.

        Args:
            question_id: the question's id in the run.

        Returns:
            The row: the prompt shown, its options, the reply and the option and text it maps to.
        """
        item = self.item
        order = item.options.order
        return ChoiceRow(id=question_id, source=item.source, slot=item.slot,
                         shown_question=item.shown_question, temperature=item.temperature,
                         options=list(item.options.options), reply=self.reply, option=self.parsed.option,
                         method=self.parsed.method, text=self.text,
                         order=None if order is None else list(order))


def rank_items(question_index: int, question: str, source: Source, shown_questions: Sequence[str],
               candidates: Sequence[str], temperatures: Sequence[float], seed: int,
               idk_text: str = DEFAULT_IDK_TEXT, option_order: OptionOrder = "fixed", passage: str = ""
               ) -> list[RankItem]:
    """One item per slot; every slot of a source shows the same merged candidates (Y_c or Y_t), listed
    in the order `option_order` gives that slot (`fixed`: first seen, in every slot).

    No candidates (every paraphrase failed, every answer empty) means nothing to choose from: no items.

    Args:
        question_index: the question's position in the batch.
        question: the original question q.
        source: which candidates these are (`paraphrase`: Y_c, `temperature`: Y_t).
        shown_questions: the question each slot shows.
        candidates: the source's candidate answers.
        temperatures: the temperature each slot ranks at, one per shown question.
        seed: the run's seed, from which each slot's own seed and option order are drawn.
        idk_text: the "I don't know" option's text.
        option_order: how each slot lists the options (`fixed`, `shuffled`, `cyclic`).
        passage: the text the question is asked with (`QARecord.context`), shown before it.

    Returns:
        One rank item per slot, none when no candidate has text.
    """
    options = RankOptions.build(candidates, idk_text)
    if not options.options:
        return []
    n = len(options.options)

    def listed(slot: int) -> RankOptions:
        return options.arranged(shown_order(n, option_order, seed=seed, question=question, source=source,
                                            slot=slot))

    return [RankItem(question_index, source, slot, shown, listed(slot), temperature,
                     seed=stable_seed(seed, question, source, slot), passage=passage)
            for slot, (shown, temperature) in enumerate(zip(shown_questions, temperatures, strict=True))]


def choose(generator: Generator, items: Sequence[RankItem], *, top_p: float = 0.9,
           max_tokens: int = 8) -> list[RankChoice]:
    """Ask every rank prompt of the whole dataset in one batched generate call.

    Args:
        generator: the main model.
        items: the rank prompts (`rank_items`).
        top_p: nucleus sampling's p for the sampled slots.
        max_tokens: each reply's token budget.

    Returns:
        One parsed choice per item, in order.
    """
    requests = [rank_request(it.shown_question, it.options, temperature=it.temperature, top_p=top_p,
                             seed=it.seed, max_tokens=max_tokens, passage=it.passage) for it in items]
    generations = generator.generate(requests) if requests else []
    return [RankChoice(it, g.text, parse_reply(g.text, it.options))
            for it, g in zip(items, generations, strict=True)]


def majority_vote(chosen: Sequence[str]) -> tuple[str | None, float | None]:
    """The most chosen text (compared after normalisation; ties: the one chosen first) and its vote share;
    (None, None) when nothing was chosen. A2C's one answer per question, in the wrapper and in a run.

    Args:
        chosen: the texts chosen, in the order the prompts were asked.

    Returns:
        The elected text as first spelled and its share of the votes, or (None, None).
    """
    if not chosen:
        return None, None
    votes = Counter(normalize(t) for t in chosen)
    top = max(votes.values())
    return next(t for t in chosen if votes[normalize(t)] == top), top / len(chosen)


def ask_to_choose(generator: Generator, questions: Sequence[str], y_c: Sequence[Sequence[str]],
                  y_t: Sequence[Sequence[str]], t_slots: Sequence[Sequence[float]], *,
                  techniques: Sequence[Technique] = DEFAULT_TECHNIQUES, top_p: float = 0.9, seed: int = 0,
                  rank_temperature: float = 0.0, max_tokens: int = 8, paraphrase_max_tokens: int = 64,
                  idk_text: str = DEFAULT_IDK_TEXT, option_order: OptionOrder = "fixed",
                  passages: Sequence[str] | None = None) -> list[list[RankChoice]]:
    """Algorithm 1, steps 3-5, for every question at once: two batched generate calls in total.

    Step 3 makes a fresh paraphrase q̃(c_i) per context with the main model (a seed the first-stage
    paraphrases did not use); a paraphrase that failed its checks falls back to q. There is one rank
    prompt per context even when some answers of Y_c are missing (their paraphrase failed). Paraphrase
    slots are ranked at `rank_temperature`; temperature slot j (`t_slots[q][j]`, one per Y_t entry) is
    ranked at its own temperature with q̃(c_{j mod I}) as the question, so the J choices are real samples.
    `option_order` lists each prompt's options as first seen (`fixed`, the paper's) or moves them from
    slot to slot (`shuffled`, `cyclic`: `a2c.qa.option_order`). Returns the choices per question,
    paraphrase slots first.

    Args:
        generator: the main model: it paraphrases anew and answers the rank prompts.
        questions: the original questions q.
        y_c: per question, its answers to the first-stage paraphrases (Y_c).
        y_t: per question, its sampled answers (Y_t).
        t_slots: per question, the temperature each answer of Y_t was sampled at.
        techniques: the in-context paraphrasing techniques, one fresh paraphrase each.
        top_p: nucleus sampling's p.
        seed: the run's seed.
        rank_temperature: the temperature of the paraphrase slots' rank prompts.
        max_tokens: each rank reply's token budget.
        paraphrase_max_tokens: each fresh paraphrase's token budget.
        idk_text: the "I don't know" option's text.
        option_order: how each slot lists the options (`fixed`, `shuffled`, `cyclic`).
        passages: per question, the text it is asked with (`QARecord.context`), shown before it in
            every rank prompt (the fresh paraphrases rephrase the question alone); None: none.

    Returns:
        Per question, its parsed choices: the paraphrase slots', then the temperature slots'.
    """
    fresh = paraphrase_questions(generator, list(questions), list(techniques),
                                 seed=stable_seed(seed, "a2c-fresh"), max_tokens=paraphrase_max_tokens)
    items: list[RankItem] = []
    for qi, question in enumerate(questions):
        shown = [p.text if p.ok else question for p in fresh[qi]]
        passage = passages[qi] if passages is not None else ""
        items += rank_items(qi, question, "paraphrase", shown, y_c[qi], [rank_temperature] * len(shown), seed,
                            idk_text, option_order, passage)
        shown_t = [shown[j % len(shown)] for j in range(len(y_t[qi]))]
        items += rank_items(qi, question, "temperature", shown_t, y_t[qi], t_slots[qi], seed, idk_text,
                            option_order, passage)
    per_question: list[list[RankChoice]] = [[] for _ in questions]
    for choice in choose(generator, items, top_p=top_p, max_tokens=max_tokens):
        per_question[choice.item.question_index].append(choice)
    return per_question


