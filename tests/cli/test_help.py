"""Every command and every option of ``pokdeng`` says what it is (``--help``), and ``--version`` works."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from pokdeng_service.cli.main import build_parser
from pokdeng_service.version import __version__


def _parsers(parser: argparse.ArgumentParser, name: str = "pokdeng") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {command}")


def test_every_command_and_option_has_help() -> None:
    missing = []
    for name, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                listed = {choice.dest for choice in action._choices_actions}
                missing += [f"{name} {command}" for command in action.choices if command not in listed]
                missing += [f"{name} {c.dest}" for c in action._choices_actions if not (c.help or "").strip()]
                continue
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, "no help text: " + ", ".join(missing)


def test_the_round_id_is_explained_where_a_round_is_named() -> None:
    parser = build_parser()
    for command in ("replay", "export"):
        text = dict(_parsers(parser))[f"pokdeng {command}"].format_help()
        assert "TABLE#N" in text and "quote it" in text, text


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.splitlines()[0] == f"pokdeng {__version__}"  # (tests/cli/test_startup.py: the rest)
