"""Ask-to-Choose (SPEC §5, Algorithm 1): the model picks among its own candidate answers.

Pure parts first (option building, reply parsing), then the batched algorithm over a whole dataset, then
the decoding wrapper `AskToChoose`, which runs the experiment's own stages in memory. A reply that names
no option is kept as *unparsed*: it is counted and left out of the chosen set, never mapped to a guess.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from a2c.config import A2CConfig, ExperimentConfig, TechniqueConfig, VariationConfig
from a2c.llm.base import GenerationRequest, Generator
from a2c.metrics import cons_lex
from a2c.prompts import load_template
from a2c.records import (
    CHOICES,
    GENERATIONS,
    AnswerField,
    ChoiceRow,
    GenerationRow,
    ParseMethod,
    Question,
    Source,
)
from a2c.seeds import stable_seed
from a2c.store import MemoryStore
from a2c.text import normalize
from a2c.variation import DEFAULT_TECHNIQUES, Technique, paraphrase_questions
from a2c.wording import plural

DEFAULT_IDK_TEXT: str = A2CConfig.model_fields["idk_text"].default


@dataclass(frozen=True)
class RankOptions:
    """Candidates as the options of one rank prompt, duplicates merged.

    `options` holds each distinct candidate once (first spelling seen); `candidate_option[i]` is the
    option candidate i was merged into, or None for an empty candidate (nothing to show). The
    "I don't know" option (`idk_text`) is always shown last, after `options`.
    """

    candidates: tuple[str, ...]
    options: tuple[str, ...]
    candidate_option: tuple[int | None, ...]
    idk_text: str = DEFAULT_IDK_TEXT

    @classmethod
    def build(cls, candidates: Sequence[str], idk_text: str = DEFAULT_IDK_TEXT) -> RankOptions:
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

    @property
    def idk_index(self) -> int:
        """The 0-based index of the "I don't know" option (shown as number len(options) + 1)."""
        return len(self.options)

    def render(self) -> str:
        shown = (*self.options, self.idk_text)
        lines = [f"{i + 1}. {' '.join(text.split())}" for i, text in enumerate(shown)]
        return "\n".join(lines)

    def candidates_of(self, option: int) -> tuple[int, ...]:
        """The candidate indices merged into one option: where a choice maps back to."""
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
                 max_tokens: int = 8, template: str = "rank") -> GenerationRequest:
    """One rank prompt as chat turns; a short reply budget, since one option number is wanted."""
    messages = load_template(template).messages(question=question, options=options.render(),
                                                idk=options.idk_text)
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
        """What `choices.jsonl` keeps of this choice."""
        item = self.item
        return ChoiceRow(id=question_id, source=item.source, slot=item.slot,
                         shown_question=item.shown_question, temperature=item.temperature,
                         options=list(item.options.options), reply=self.reply, option=self.parsed.option,
                         method=self.parsed.method, text=self.text)


def rank_items(question_index: int, question: str, source: Source, shown_questions: Sequence[str],
               candidates: Sequence[str], temperatures: Sequence[float], seed: int,
               idk_text: str = DEFAULT_IDK_TEXT) -> list[RankItem]:
    """One item per slot; every slot of a source shows the same merged candidates (Y_c or Y_t).

    No candidates (every paraphrase failed, every answer empty) means nothing to choose from: no items.
    """
    options = RankOptions.build(candidates, idk_text)
    if not options.options:
        return []
    return [RankItem(question_index, source, slot, shown, options, temperature,
                     seed=stable_seed(seed, question, source, slot))
            for slot, (shown, temperature) in enumerate(zip(shown_questions, temperatures, strict=True))]


def choose(generator: Generator, items: Sequence[RankItem], *, top_p: float = 0.9,
           max_tokens: int = 8) -> list[RankChoice]:
    """Ask every rank prompt of the whole dataset in one batched generate call."""
    requests = [rank_request(it.shown_question, it.options, temperature=it.temperature, top_p=top_p,
                             seed=it.seed, max_tokens=max_tokens) for it in items]
    generations = generator.generate(requests) if requests else []
    return [RankChoice(it, g.text, parse_reply(g.text, it.options))
            for it, g in zip(items, generations, strict=True)]


@dataclass
class Choice:
    """What the decoding wrapper returns for one question."""

    question: str
    answer: str | None  # the most chosen option's text; None when no reply could be parsed
    candidates: list[str]  # Y_c then Y_t (a paraphrase that failed its checks has no answer in Y_c)
    choices: list[ChoiceRow] = field(repr=False)  # one per rank prompt, as `choices.jsonl` keeps them
    consistency: dict[str, float | int | None] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)  # the question each candidate answered (q or a paraphrase)
    generations: list[GenerationRow] = field(default_factory=list, repr=False)  # the rows behind `candidates`

    @property
    def chosen_texts(self) -> list[str]:
        return [c.text for c in self.choices if c.text is not None]


def summarize(question: str, generations: Sequence[GenerationRow], choices: Sequence[ChoiceRow],
              answer_field: AnswerField = "short") -> Choice:
    """Majority vote over parsed choices (ties: first chosen), with agreement before and after choosing."""
    candidates = [g.answer(answer_field) for g in generations]
    chosen = [c.text for c in choices if c.text is not None]
    votes = Counter(normalize(t) for t in chosen)
    answer = None
    if chosen:
        top = max(votes.values())
        answer = next(t for t in chosen if votes[normalize(t)] == top)
    consistency: dict[str, float | int | None] = {
        "candidates_lexical": _lexical_agreement(candidates),
        "choices_lexical": _lexical_agreement(chosen),
        "vote_share": (votes[normalize(answer)] / len(chosen)) if answer is not None else None,
        "unparsed": sum(1 for c in choices if not c.parsed),
    }
    return Choice(question, answer, candidates, list(choices), consistency, [g.asked for g in generations],
                  list(generations))


def _lexical_agreement(texts: Sequence[str]) -> float | None:
    return cons_lex(list(texts)) if len(texts) >= 2 else None


def ask_to_choose(generator: Generator, questions: Sequence[str], y_c: Sequence[Sequence[str]],
                  y_t: Sequence[Sequence[str]], t_slots: Sequence[Sequence[float]], *,
                  techniques: Sequence[Technique] = DEFAULT_TECHNIQUES, top_p: float = 0.9, seed: int = 0,
                  rank_temperature: float = 0.0, max_tokens: int = 8, paraphrase_max_tokens: int = 64,
                  idk_text: str = DEFAULT_IDK_TEXT) -> list[list[RankChoice]]:
    """Algorithm 1, steps 3-5, for every question at once: two batched generate calls in total.

    Step 3 makes a fresh paraphrase q̃(c_i) per context with the main model (a seed the first-stage
    paraphrases did not use); a paraphrase that failed its checks falls back to q. There is one rank
    prompt per context even when some answers of Y_c are missing (their paraphrase failed). Paraphrase
    slots are ranked at `rank_temperature`; temperature slot j (`t_slots[q][j]`, one per Y_t entry) is
    ranked at its own temperature with q̃(c_{j mod I}) as the question, so the J choices are real samples.
    Returns the choices per question, paraphrase slots first.
    """
    fresh = paraphrase_questions(generator, list(questions), list(techniques),
                                 seed=stable_seed(seed, "a2c-fresh"), max_tokens=paraphrase_max_tokens)
    items: list[RankItem] = []
    for qi, question in enumerate(questions):
        shown = [p.text if p.ok else question for p in fresh[qi]]
        items += rank_items(qi, question, "paraphrase", shown, y_c[qi], [rank_temperature] * len(shown), seed,
                            idk_text)
        shown_t = [shown[j % len(shown)] for j in range(len(y_t[qi]))]
        items += rank_items(qi, question, "temperature", shown_t, y_t[qi], t_slots[qi], seed, idk_text)
    per_question: list[list[RankChoice]] = [[] for _ in questions]
    for choice in choose(generator, items, top_p=top_p, max_tokens=max_tokens):
        per_question[choice.item.question_index].append(choice)
    return per_question


_VARIATION = VariationConfig()  # the wrapper decodes as a default experiment config does


class AskToChoose:
    """A2C as a decoding wrapper: answer each question by letting the model choose among its own answers.

    `answer_many` runs the experiment's own variation, answers and A2C stages (`a2c.stages.ALGORITHM_1`)
    on an in-memory store, batched over all questions: paraphrase (aux model), answer the paraphrases and
    sample q at each temperature (main model), then rank (main model). So for the same question, seed and
    settings it asks exactly the prompts `a2c run` asks. Works with any `Generator`, e.g. one bound to a
    remote vLLM server.
    """

    def __init__(self, generator: Generator, aux: Generator | None = None, *,
                 techniques: Sequence[Technique] = DEFAULT_TECHNIQUES,
                 temperatures: Sequence[float] = tuple(_VARIATION.temperatures),
                 top_p: float = _VARIATION.top_p, samples: int = 1,
                 paraphrase_temperature: float = _VARIATION.paraphrase_temperature,
                 rank_temperature: float = 0.0, seed: int = 0,
                 answer_field: AnswerField = "short", idk_text: str = DEFAULT_IDK_TEXT) -> None:
        self.generator = generator
        self.aux = aux or generator
        self.config = ExperimentConfig(
            name="ask-to-choose", seed=seed,
            variation=VariationConfig(techniques=[TechniqueConfig(**asdict(t)) for t in techniques],
                                      temperatures=list(temperatures), top_p=top_p, samples=samples,
                                      paraphrase_temperature=paraphrase_temperature,
                                      answer_field=answer_field),
            a2c=A2CConfig(rank_temperature=rank_temperature, idk_text=idk_text))

    def answer(self, question: str) -> Choice:
        return self.answer_many([question])[0]

    def answer_many(self, questions: Sequence[str], *, log: Callable[[str], None] | None = None,
                    progress: bool = False) -> list[Choice]:
        """`log` gets a line as each stage starts and ends; `progress` shows a bar per generate call."""
        from a2c.llm.progress import generation_progress
        from a2c.stage import Generators, RunContext, run_stages
        from a2c.stages import ALGORITHM_1

        asked = [Question(f"q{i}", q) for i, q in enumerate(questions)]
        if not asked:
            return []
        config = self.config.model_copy(update={"chunk_size": len(asked)})  # one batched call per step
        store = MemoryStore()
        ctx = RunContext(config, store, asked, generators=Generators(self.generator, self.aux),
                         progress=False)
        say = log or (lambda _line: None)
        for number, stage in enumerate(ALGORITHM_1, 1):
            step = f"[{number}/{len(ALGORITHM_1)}] {stage.name}"
            say(f"{step}: started")
            with generation_progress(f"{stage.name}: generate", enabled=progress):
                stats = run_stages(ctx, [stage])[stage.name]
            say(f"{step}: done in {stats.seconds:.1f} s ({plural(stats.generated, 'prompt')} generated, "
                f"{stats.cached} from the cache)")
        generations: dict[str, list[GenerationRow]] = {q.id: [] for q in asked}
        for g in store.read_rows(GENERATIONS):
            generations[g.id].append(g)
        choices: dict[str, list[ChoiceRow]] = {q.id: [] for q in asked}
        for c in store.read_rows(CHOICES):
            choices[c.id].append(c)
        return [summarize(q.question, generations[q.id], choices[q.id], config.variation.answer_field)
                for q in asked]
