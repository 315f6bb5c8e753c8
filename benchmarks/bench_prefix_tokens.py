"""Prompt tokens vLLM's prefix cache leaves to compute on the paper's protocol, counted offline in seconds.

Run: `.venv/bin/python benchmarks/bench_prefix_tokens.py RUN_DIR [--limit 64]` from the repository root, on
a finished QA run of the embedded SmolLM2 (`paraphrases.jsonl`, `generations.jsonl`, `choices.jsonl`). It
rebuilds the requests the stages sent, in their order, with a2c's own prompt builders (paraphrases and
their retries, long and short answers, A2C's fresh paraphrases and rank prompts, USC), renders them with
the model's chat template and counts what vLLM's prefix cache reuses: whole 32-token blocks of a prefix
an earlier prompt had, at most all but the prompt's last token (vLLM recomputes at least one), with no
eviction. Requests a2c sends once are counted once: identical greedy ones (a short-answer prompt whose
long answer repeats), and greedy rank prompts that differ only in their seed (`--seeded-greedy-twice`
counts those twice, as a2c sent them before). It prints, per template, requests, prompt and computed
tokens per request for the prompts as the templates render them now and with their `system_pad` lines
taken out (the layout before block alignment).

`bench_engine_ratio.py` measures the same on the engine itself but needs the whole pipeline run (minutes
of engine time per 16 questions); this count takes the run's answers as they are, so both layouts see the
same answers. On the 64-question slice it gives 54.5 computed tokens per request without the padding,
against the engine's 53 measured on a run of its own (other answers, and the engine's cache may evict).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from a2c.llm.base import GenerationRequest, Message
from a2c.llm.render import prompt_text
from a2c.prompting.paraphrase import DEFAULT_TECHNIQUES, paraphrase_messages
from a2c.prompting.prompts import PAD_LINE, load_template
from a2c.qa.rank import RankOptions, rank_request
from a2c.qa.usc import Responses, usc_request

BLOCK = 32
# (what it is, chat turns, what makes two requests one: None for sampled ones) in the order the stages ask
Stream = list[tuple[str, tuple[Message, ...], Any]]


def _rows(run: Path, name: str) -> Iterator[dict[str, Any]]:
    with (run / name).open(encoding="utf-8") as lines:
        yield from (json.loads(line) for line in lines)


def rebuild(run: Path, limit: int, seeded_greedy_twice: bool = False) -> Stream:
    """The requests of a run's first `limit` questions, stage by stage."""
    asked = list(_rows(run, "paraphrases.jsonl"))[:limit]
    ids = {p["id"] for p in asked}
    gens = [g for g in _rows(run, "generations.jsonl") if g["id"] in ids]
    choices = [c for c in _rows(run, "choices.jsonl") if c["id"] in ids]
    template = load_template("paraphrase")
    first = [("paraphrase", paraphrase_messages(template, DEFAULT_TECHNIQUES, k, p["question"]), None)
             for p in asked for k in range(len(DEFAULT_TECHNIQUES))]
    retries = [("paraphrase", paraphrase_messages(template, DEFAULT_TECHNIQUES, k, p["question"]), None)
               for p in asked for k, x in enumerate(p["paraphrases"]) if not x["ok"]]
    long_tmpl, short_tmpl = load_template("long_answer"), load_template("answer")
    long_answers = [("long_answer", long_tmpl.messages(question=g["asked"]), None) for g in gens]
    short = [("answer", turns, turns) for turns in  # greedy, no seed
             (short_tmpl.messages(context=g["long"], question=g["asked"]) for g in gens)]
    fresh = [("A2C paraphrase", messages, None) for _, messages, _ in first]  # the same prompts, another seed
    rank = []
    for slot, c in enumerate(choices):
        turns = _turns(rank_request(c["shown_question"], RankOptions.build(c["options"]), temperature=0.0,
                                    top_p=1.0, seed=None))
        greedy = c["temperature"] == 0
        rank.append(("A2C rank", turns, (turns, slot if seeded_greedy_twice else None) if greedy else None))
    usc = []
    for p in asked:
        for source in ("paraphrase", "temperature"):
            candidates = [g["short"] for g in gens if g["id"] == p["id"] and g["source"] == source]
            if candidates:
                turns = _turns(usc_request(p["question"], Responses.of(candidates)))
                usc.append(("usc", turns, None))
    return [*first, *retries, *long_answers, *short, *fresh, *rank, *usc]


def _turns(request: GenerationRequest) -> tuple[Message, ...]:
    assert request.messages is not None  # rank and USC prompts are chat turns
    return request.messages


def _unpadded(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The turns without the pad lines ending the system text (the layout before block alignment)."""
    if messages[0].role != "system":
        return messages
    content = messages[0].content
    while content.endswith(PAD_LINE):
        content = content.removesuffix(PAD_LINE)
    return (Message("system", content), *messages[1:])


def count(stream: Stream, tokenizer: Any, padded: bool) -> dict[str, list[int]]:
    """Per kind of request: [requests, prompt tokens, computed prompt tokens]."""
    cached: set[int] = set()
    sent: set[Any] = set()  # greedy requests already sent, by what makes them one
    table: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for kind, messages, same in stream:
        if same is not None:
            if (kind, same) in sent:
                continue
            sent.add((kind, same))
        turns = messages if padded else _unpadded(messages)
        ids = tokenizer.encode(prompt_text(tokenizer, GenerationRequest(messages=turns)))
        chain, digest = [], 0
        for start in range(0, len(ids) - BLOCK + 1, BLOCK):
            digest = hash((digest, tuple(ids[start:start + BLOCK])))
            chain.append(digest)
        hit = 0
        while hit < (len(ids) - 1) // BLOCK and chain[hit] in cached:
            hit += 1
        cached.update(chain)
        row = table[kind]
        row[0] += 1
        row[1] += len(ids)
        row[2] += len(ids) - hit * BLOCK
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished QA run folder of the embedded SmolLM2")
    parser.add_argument("--limit", type=int, default=64, help="its first N questions (default 64)")
    parser.add_argument("--seeded-greedy-twice", action="store_true",
                        help="count greedy rank prompts that differ only in seed once each (as before)")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    from a2c.models.convert import prepared_dir

    tokenizer = AutoTokenizer.from_pretrained(prepared_dir("SmolLM2-135M-Instruct"))
    stream = rebuild(args.run, args.limit, args.seeded_greedy_twice)
    print(f"{args.run}: {args.limit} questions, {len(stream):,} requests rebuilt, {BLOCK}-token blocks")
    for label, padded in (("without system_pad (before)", False), ("as rendered now", True)):
        table = count(stream, tokenizer, padded)
        n, prompt, computed = (sum(row[i] for row in table.values()) for i in range(3))
        print(f"{label}: {prompt / n:.1f} prompt tokens per request, {computed / n:.1f} computed "
              f"({1 - computed / prompt:.1%} from the prefix cache); {prompt:,} prompt, "
              f"{computed:,} computed")
        for kind, (requests, kind_prompt, kind_computed) in table.items():
            print(f"  {kind:15} {requests:6,} requests {kind_prompt / requests:6.1f} prompt/request "
                  f"{kind_computed / requests:6.1f} computed/request ({kind_prompt:,} prompt, "
                  f"{kind_computed:,} computed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
