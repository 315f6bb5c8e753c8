from pathlib import Path

import pytest

from a2c.prompting.prompts import TemplateError, flatten, parse_template


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    return path


GOOD = """
fields: [question, answer]
system: You compare answers.
examples:
  - user: "Q: sky colour? A: blue"
    assistant: "Yes"
user: "Q: {question} A: {answer}"
"""


def test_render_messages_and_flatten(tmp_path):
    tpl = parse_template(write(tmp_path, GOOD))
    msgs = tpl.messages(question="Why?", answer="Because")
    assert [m.role for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[-1].content == "Q: Why? A: Because"
    text = flatten(msgs)
    assert text.startswith("You compare answers.")
    assert text.endswith("User: Q: Why? A: Because\n\nAssistant:")


def test_missing_field_names_file_and_field(tmp_path):
    path = write(tmp_path, GOOD)
    tpl = parse_template(path)
    with pytest.raises(TemplateError, match=r"t\.yaml.*missing field\(s\) \['answer'\]"):
        tpl.messages(question="Why?")
    with pytest.raises(TemplateError, match="unknown field"):
        tpl.messages(question="a", answer="b", extra="c")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fields: [a]\nuser: 'x {b}'\n", r"placeholder\(s\) \['b'\] not declared"),
        ("fields: [a, b]\nuser: 'x {a}'\n", r"field\(s\) \['b'\] declared but never used"),
        ("fields: [a]\n", "missing field 'user'"),
        ("user: [unclosed\n", "not valid YAML"),
        ("fields: []\nuser: 'x'\nexamples:\n  - user: only\n", r"examples\[0\] needs"),
        ("fields: []\nuser: 'x'\nsytem: typo\n", r"unknown key\(s\) \['sytem'\]"),
    ],
)
def test_malformed_templates_are_named(tmp_path, text, message):
    with pytest.raises(TemplateError, match=message):
        parse_template(write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(TemplateError, match="not found"):
        parse_template(tmp_path / "nope.yaml")


def test_literal_braces_survive(tmp_path):
    tpl = parse_template(write(tmp_path, "fields: [a]\nuser: 'json {{\"k\": 1}} {a}'\n"))
    assert tpl.messages(a="z")[-1].content == 'json {"k": 1} z'
