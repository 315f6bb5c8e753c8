"""Every command says what it does (`--help` has a description paragraph) and every flag has help text."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from a2c.cli import build_parser, main


def _commands(parser: argparse.ArgumentParser, name: str = "a2c"
              ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                yield from _commands(sub, f"{name} {command}")


COMMANDS = dict(_commands(build_parser()))


def test_the_walk_reaches_every_command():
    assert {"a2c run", "a2c probe", "a2c report", "a2c score", "a2c judge", "a2c metrics rc",
            "a2c metrics rc-plot", "a2c models prepare", "a2c models path", "a2c export"} <= set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_flag_and_argument_has_help(name):
    lacking = [action.option_strings or [action.dest] for action in COMMANDS[name]._actions
               if not isinstance(action, argparse._SubParsersAction)
               and (not action.help or action.help == argparse.SUPPRESS)]
    assert lacking == [], f"{name}: no help for {lacking}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_a_description(name):
    assert COMMANDS[name].description, name


@pytest.mark.parametrize(("command", "words"), [
    ("run", ["reuses every stage", "Relative paths in the config are read from its folder"]),
    ("probe", ["Ask one question", "Ask-to-Choose answer", "--base-url"]),
])
def test_run_and_probe_help_open_with_a_paragraph(capsys, command, words):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert all(w in text for w in words)
    if command == "probe":
        assert "--seed SEED seed of every sampled prompt" in text


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_help_shows_a_doubled_percent_sign(name):
    """argparse %-formats help strings but not descriptions: a description's `95%%` prints as written."""
    assert "%%" not in COMMANDS[name].format_help(), name
