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


def test_every_subcommand_has_its_own_help(capsys: pytest.CaptureFixture[str]) -> None:
    """``pokdeng keys new --help`` is the help of ``keys new``, not of ``keys``: every command with actions has
    them as subcommands, and a positional argument with choices is a value (a profile), never an action."""
    parser = build_parser()
    for name, sub in _parsers(parser):
        for action in sub._actions:
            if not action.option_strings and action.choices and not isinstance(action, argparse._SubParsersAction):
                assert action.dest == "profile", f"{name} {action.dest}: an action, not a subcommand"
        if name == "pokdeng":
            continue
        with pytest.raises(SystemExit) as done:
            parser.parse_args([*name.split()[1:], "--help"])
        assert done.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: {name} "), name
    for command in (["keys", "new"], ["auth", "new"], ["checkpoints", "sign"], ["wallet", "pending"]):
        assert f"pokdeng {' '.join(command)}" in dict(_parsers(parser)), command


def test_the_token_roles_named_by_the_cli_are_the_roles() -> None:
    from pokdeng_service.application.principal import Role
    from pokdeng_service.cli.auth import ROLES

    assert set(ROLES) == {r.value for r in Role}
