"""The ``rtp`` and ``simulate`` commands (pokdeng_service.cli.rtp)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from pokdeng_service.cli.rtp import add_rtp_commands, main


def test_registers_on_a_subparsers_object() -> None:
    parser = argparse.ArgumentParser(prog="pokdeng")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_rtp_commands(subparsers)
    args = parser.parse_args(["rtp", "classic", "--strategy", "best", "--json"])
    assert (args.command, args.profile, args.strategy, args.json) == ("rtp", "classic", "best", True)
    assert callable(args.handler)
    args = parser.parse_args(["simulate", "room", "--rounds", "50", "--seed", "9"])
    assert (args.rounds, args.seed, args.strategy) == (50, "9", "reference")
    with pytest.raises(SystemExit):
        parser.parse_args(["rtp", "poker"])


def test_rtp_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rtp", "ante"]) == 0
    out = capsys.readouterr().out
    assert "ante@1" in out
    assert "RTP" in out and "98.9923%" in out and "152192003/153741315" in out
    assert "E[bet net] per unit of bet" in out
    assert "special pair" in out


def test_rtp_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rtp", "kingmaker", "--strategy", "best", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["profile"] == "kingmaker@1" and data["strategy"] == "best"
    assert data["side_bet"]["rtp"]["exact"] == "143/170"
    assert {d["total"] for d in data["decisions"]} == set(range(8))
    assert 0.9 < data["rtp"]["decimal"] < 1


def test_rtp_refuses_an_option_of_another_profile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rtp", "room", "--straights"]) == 2
    assert "straights" in capsys.readouterr().err


def test_simulate_prints_the_seed_and_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "classic", "--rounds", "40", "--seed", "abc"]) == 0
    captured = capsys.readouterr()
    assert "seed: abc" in captured.out and "seed: abc" in captured.err
    assert "95% interval" in captured.out and "rounds/s" in captured.out


def test_simulate_json_is_reproducible(capsys: pytest.CaptureFixture[str]) -> None:
    results = []
    for _ in range(2):
        assert main(["simulate", "room", "--rounds", "30", "--seed", "5", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        results.append((data["rtp"], data["win"], data["hand_types"]))
    assert results[0] == results[1]


def test_runs_standalone() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pokdeng_service.cli.rtp", "rtp", "ante", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rtp"]["exact"] == "152192003/153741315"


@pytest.mark.parametrize("command", [["rtp", "classic"], ["simulate", "classic", "--rounds", "200"]])
def test_a_reader_that_goes_away_ends_it_as_sigpipe(command: list[str]) -> None:
    """Found from the outside: with its output's reader gone, rich's console exited 1 ("failed"); the CLI's
    console exits 141, as every other command does (README, exit codes)."""
    import os

    read, write = os.pipe()
    os.close(read)  # (the reader is gone before anything is written)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pokdeng_service.cli", *command],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
