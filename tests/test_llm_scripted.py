"""The scripted backend: deterministic replies, registered like any backend, and a whole run in seconds."""

from __future__ import annotations

import json

from a2c.llm import GenerationRequest, GeneratorConfig, Message, build_generator
from a2c.llm.scripted import scripted_reply
from a2c.run.config_file import parse_config
from a2c.run.pipeline import run_experiment


def _generator(model: str = "scripted"):
    return build_generator(GeneratorConfig(backend="scripted", model=model, cache=None))


def _ask(text: str, **sampling) -> GenerationRequest:
    return GenerationRequest(messages=(Message("user", text),), **sampling)


def test_greedy_replies_follow_the_prompt_and_samples_follow_the_seed():
    gen = _generator()
    greedy = [g.text for g in gen.generate([_ask("Q?", seed=s) for s in range(20)])]
    assert len(set(greedy)) == 1 and greedy[0] in {"1", "2", "3"}
    sampled = [g.text for g in gen.generate([_ask("Q?", temperature=0.7, seed=s) for s in range(20)])]
    assert len(set(sampled)) > 1 and set(sampled) <= {"1", "2", "3"}
    # the same request always gets the same reply
    assert sampled == [g.text for g in gen.generate([_ask("Q?", temperature=0.7, seed=s) for s in range(20)])]


def test_the_model_name_is_the_script_and_stop_strings_cut():
    gen = _generator("scripted:Yes, sure|No way")
    replies = {g.text for g in gen.generate([_ask(f"Q{k}?") for k in range(30)])}
    assert replies == {"Yes, sure", "No way"}
    request = _ask("Q1?", stop=(",",))
    assert scripted_reply(request, ["Yes, sure"]) == "Yes"
    top = gen.generate([_ask("Q1?", logprobs=2)])[0].completions[0].logprobs
    assert top == [{gen.generate([_ask("Q1?")])[0].text: 0.0}]


def test_a_whole_run_on_the_scripted_backend(tmp_path):
    config = parse_config(f"""
name: scripted
limit: 3
generator: {{backend: scripted, model: scripted, cache: {tmp_path / 'cache.sqlite'}}}
judges: [exact, rouge1]
accuracy: {{similarities: [rouge1]}}
output: {tmp_path / 'run'}
""")
    result = run_experiment(config, progress=False)
    run = result.folder
    choices = [json.loads(line) for line in (run / "choices.jsonl").read_text().splitlines()]
    generations = [json.loads(line) for line in (run / "generations.jsonl").read_text().splitlines()]
    # every reply is "1", "2" or "3": no paraphrase is a question, so all fail the paraphrase rule, only the
    # 4 temperatures are answered, and with no Y_c the contexts have nothing to choose from
    paraphrases = [json.loads(line) for line in (run / "paraphrases.jsonl").read_text().splitlines()]
    assert [p["problem"] for row in paraphrases for p in row["paraphrases"]] == ["not a question"] * 3 * 4
    assert len(generations) == 3 * 4 and {g["short"] for g in generations} <= {"1", "2", "3"}
    assert [c["source"] for c in choices] == ["temperature"] * 3 * 4
    for c in choices:
        # options are the distinct candidates; a reply "k" names option k, or "don't know" right after them
        named = int(c["reply"])
        assert c["option"] == (named - 1 if named <= len(c["options"]) + 1 else None)
    assert result.totals().generated > 0 and (run / "report.md").is_file()


def test_ask_to_choose_answer_reports_progress_only_when_asked(capsys):
    from a2c.choose import AskToChoose

    chooser = AskToChoose(_generator(), temperatures=(0.5, 1.0))
    quiet = chooser.answer("How many legs does a spider have?")
    assert capsys.readouterr().err == ""
    loud = chooser.answer("How many legs does a spider have?", progress=True)
    err = capsys.readouterr().err
    assert "[1/3] variation: started" in err and "[3/3] ask_to_choose: done in" in err
    assert loud.answer == quiet.answer  # the same answer, told as it goes
