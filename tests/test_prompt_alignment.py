"""The shipped templates' block alignment (`system_pad`, a2c.prompting.prompts): with the embedded model's
tokenizer the part every prompt of a template shares ends on a 32-token KV-cache block, and the padding is the
pinned whitespace, nothing else."""

from __future__ import annotations

import dataclasses

import pytest

from a2c.llm import GenerationRequest, GeneratorConfig
from a2c.llm.render import prompt_text
from a2c.prompting.prompts import PAD_LINE, TemplateError, load_template, parse_template
from a2c.qa.rank import RankOptions, rank_request

BLOCK = 32
# template → (system_pad, tokens every prompt of it shares with SmolLM2's tokenizer and chat template)
ALIGNED = {"rank": (18, 160), "answer": (8, 224)}
IDK = "Don't know the correct answer"  # the paper's option, shown in the rank prompt's examples too
FIELDS = {"rank": [{"question": "Why is the sky blue?", "options": f"1. Light\n2. {IDK}", "idk": IDK},
                   {"question": "Zebras eat what?", "options": f"1. Grass\n2. {IDK}", "idk": IDK}],
          "answer": [{"context": "Because of light.", "question": "Why?"},
                     {"context": "Zebras graze.", "question": "What?"}]}


def test_the_engine_block_is_the_one_the_padding_was_counted_for():
    assert GeneratorConfig(backend="vllm").vllm_block_size == BLOCK


@pytest.mark.parametrize("name", sorted(ALIGNED))
def test_the_shared_prefix_ends_on_a_kv_block(smollm2, name):
    tokenizer = smollm2.impl.tokenizer
    pad, shared = ALIGNED[name]
    template = load_template(name)
    assert template.system_pad == pad
    first, second = (tokenizer.encode(prompt_text(tokenizer, GenerationRequest(messages=m)))
                     for m in (template.messages(**values) for values in FIELDS[name]))
    common = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    assert common == shared and common % BLOCK == 0
    # without the padding the same prompts share `pad` tokens less: each pad line is one token
    bare = dataclasses.replace(template, system_pad=0)
    bare_messages = bare.messages(**FIELDS[name][0])
    plain = tokenizer.encode(prompt_text(tokenizer, GenerationRequest(messages=bare_messages)))
    assert len(first) - len(plain) == pad


def test_the_rank_prompt_layout_is_pinned():
    messages = rank_request("Is it?", RankOptions.build(["Yes", "No"]), temperature=0.0, top_p=1.0,
                            seed=None).messages
    assert messages[0].content == ("You pick the single most correct option for a question. Reply with the "
                                   "option number only.\n" + " \n" * 18)
    # the paper's order (question, options, the instruction to choose); the system text says how to reply
    assert messages[-1].content == (f"Question: Is it?\nOptions:\n1. Yes\n2. No\n3. {IDK}\nWhich option "
                                    "answers the question most correctly?\n")
    assert PAD_LINE == " \n"


@pytest.mark.parametrize(("value", "message"), [
    ("-1", r"'system_pad' must be a whole number >= 0, got -1"),
    ("true", r"'system_pad' must be a whole number >= 0, got True"),
    ("two", r"'system_pad' must be a whole number >= 0, got 'two'"),
])
def test_a_bad_system_pad_is_named(tmp_path, value, message):
    path = tmp_path / "t.yaml"
    path.write_text(f"fields: [a]\nsystem: Be brief.\nsystem_pad: {value}\nuser: '{{a}}'\n")
    with pytest.raises(TemplateError, match=rf"t\.yaml: {message}"):
        parse_template(path)


def test_system_pad_needs_a_system_text(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("fields: [a]\nsystem_pad: 2\nuser: '{a}'\n")
    with pytest.raises(TemplateError, match=r"t\.yaml: 'system_pad' needs a 'system' text"):
        parse_template(path)
