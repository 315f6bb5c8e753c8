"""`ask_to_choose`: the sample's question varied (paraphrases, temperatures) through inspect's model, then
Ask-to-Choose picks among the model's own answers. It runs `a2c.choose.AskToChoose` (the QA wing's
Algorithm 1), so for the same question, seed and settings it asks the prompts `a2c run` asks.

The evidence lands in `state.metadata["a2c"]`: candidates, every rank reply, the chosen answer and each
judge's agreement matrix per source. Its headline values are also copied flat (`a2c_answer`,
`a2c_candidates`, `a2c_cons_sem_<judge>_<source>`, ...), since inspect's viewer shows a nested object
collapsed, as `Object(n)`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import anyio.to_thread
from inspect_ai.model import ChatMessageAssistant, ModelOutput, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from a2c.choose import AskToChoose, Choice
from a2c.inspect.generator import InspectGenerator
from a2c.judges import Judge, JudgeSpec
from a2c.qa.config import A2CConfig, VariationConfig
from a2c.serve.schema import Candidate, RankReply, chose_dont_know, selected_text

EVIDENCE = "a2c"  # the key of the evidence in a sample's metadata
READABLE = "a2c_"  # the prefix of the flat copies the viewer shows at a glance (`readable`)
logger = logging.getLogger(__name__)


def evidence(choice: Choice) -> dict[str, Any]:
    """What the log keeps of one A2C answer: the same candidate and rank-reply shapes as `a2c serve`'s
    `a2c` response field, plus each judge's matrix and set scores per source."""
    answer, selected_by = selected_text(choice)
    return {
        "answer": answer,
        "selected_by": selected_by,
        "dont_know": chose_dont_know(choice),
        "vote_share": choice.consistency.get("vote_share"),
        "candidates": [Candidate(source=g.source, slot=g.slot, technique=g.technique,
                                 temperature=g.temperature, asked=g.asked, answer=text).model_dump()
                       for g, text in zip(choice.generations, choice.candidates, strict=True)],
        "choices": [RankReply(**c.model_dump(exclude={"id"})).model_dump() for c in choice.choices],
        "agreement": {judge: {source: {"matrix": judged.matrix, "cons_sem": judged.scores.cons_sem,
                                       "entropy": judged.scores.entropy, "clusters": judged.scores.clusters}
                              for source, judged in sources.items()}
                      for judge, sources in choice.judged.items()},
        "lexical": {"candidates": choice.consistency.get("candidates_lexical"),
                    "choices": choice.consistency.get("choices_lexical")},
        "unparsed": choice.consistency.get("unparsed"),
    }


def candidate_label(candidate: dict[str, Any]) -> str:
    """How a candidate is named in the viewer: its source and what varied (technique or temperature)."""
    if candidate["source"] == "paraphrase":
        return f"paraphrase ({candidate['technique']})"
    return f"temperature {candidate['temperature']:g}"


def readable(proof: dict[str, Any]) -> dict[str, str | float | bool | None]:
    """Flat copies of the evidence's headline values for the sample's metadata: inspect's viewer shows a
    string or number as it is (a string as plain text), but a nested object only as `Object(n)` until
    it is opened.

    Args:
      proof: the evidence (`evidence`).

    Returns:
      `a2c_`-prefixed scalars: the answer, how it was selected, whether it is "don't know", the vote
      share, the candidates one per line, and Cons_sem per judge and source (None where undefined).
    """
    # one line per candidate: an answer's own line breaks are made spaces
    listed = "\n".join(f"{i}. {candidate_label(c)}: {' '.join(c['answer'].split())}"
                       for i, c in enumerate(proof["candidates"], 1))
    out: dict[str, str | float | bool | None] = {
        f"{READABLE}answer": proof["answer"], f"{READABLE}selected_by": proof["selected_by"],
        f"{READABLE}dont_know": proof["dont_know"], f"{READABLE}vote_share": proof["vote_share"],
        f"{READABLE}candidates": listed}
    for judge, sources in proof["agreement"].items():
        for source, judged in sources.items():
            out[f"{READABLE}cons_sem_{judge}_{source}"] = judged["cons_sem"]
    return out


@solver
def ask_to_choose(techniques: list[str] | None = None, temperatures: list[float] | None = None,
                  samples: int | None = None, variation: dict[str, Any] | None = None,
                  a2c: dict[str, Any] | None = None, judges: list[str] | None = None,
                  seed: int = 0) -> Solver:
    """Answer by Ask-to-Choose over the task's model.

    Args:
      techniques: paraphrase techniques (a2c's names, e.g. synonyms); default a2c's.
      temperatures: sampling temperatures of the question itself; default a2c's.
      samples: answers per temperature.
      variation: any other field of a run config's `variation:` (reply budgets, top_p, ...).
      a2c: a run config's `ask_to_choose:` (rank temperature, max_tokens, idk_text, option_order).
      judges: judges whose agreement matrix per source goes into the evidence (default rouge1).
      seed: the A2C seed.
    """
    settings = VariationConfig.model_validate({**(variation or {}), **{
        k: v for k, v in {"techniques": techniques, "temperatures": temperatures, "samples": samples}.items()
        if v is not None}})
    per_source = {"paraphrase": len(settings.techniques),
                  "temperature": len(settings.temperatures) * settings.samples}
    alone = [source for source, n in per_source.items() if n < 2]
    if alone:
        logger.warning("ask_to_choose: one candidate per question from source %s, whose Cons_sem and "
                       "entropy are then undefined (NaN); give two or more techniques, and temperatures x "
                       "samples >= 2", " and ".join(alone))
    specs = [JudgeSpec(name=name) for name in (judges if judges is not None else ["rouge1"])]
    rank = A2CConfig.model_validate(a2c or {})
    built: dict[str, Judge] = {}  # each judge is built once, by the first sample that needs it
    building = threading.Lock()  # samples run concurrently, each in its own worker thread

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        wrapper = AskToChoose(InspectGenerator(model), variation=settings, a2c=rank, seed=seed)

        def run() -> Choice:
            with building:
                for spec in specs:
                    if spec.name not in built:
                        built[spec.name] = spec.build()
            return wrapper.answer_many([state.input_text], judges=specs, built=dict(built))[0]

        choice = await anyio.to_thread.run_sync(run)
        proof = evidence(choice)
        state.metadata[EVIDENCE] = proof
        state.metadata.update(readable(proof))
        state.output = ModelOutput.from_content(model=model.name, content=proof["answer"])
        state.messages.append(ChatMessageAssistant(content=proof["answer"], model=model.name))
        return state

    return solve
