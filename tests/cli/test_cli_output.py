"""What the long and the machine-read commands print: ``verify --all`` a failure per line and one-line tallies
(every verdict with ``--verbose``), a progress bar on standard error only when it is a terminal, ``--json`` one
object a machine reads; ``replay --player`` with a player the round does not concern exits 2 before printing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_OK, EXIT_UNANCHORED, EXIT_USAGE, main

from .stores import Played, play_rounds


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    db = tmp_path_factory.mktemp("played") / "pokdeng.sqlite"
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db)))
    closed, open_round = play_rounds(service.apps[0])
    service.close()
    return Played(db, closed, open_round)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_verify_all_says_failures_and_tallies_every_verdict_with_verbose(
    played: Played, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(played.db)
    assert main(["verify", "--all", "--db", db]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{len(played.closed)} passed, 0 failed" and "PASS  " not in out
    assert out.splitlines()[1].startswith("store: ") and len(out.splitlines()) == 2
    assert main(["verify", "--all", "--verbose", "--db", db]) == EXIT_OK
    verbose = capsys.readouterr().out
    assert f"PASS  round {played.closed[0]}" in verbose and f"PASS  round {played.open_round} (open)" in verbose


def test_verify_all_draws_progress_on_a_terminal_only(
    played: Played, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(played.db)
    assert main(["verify", "--all", "--db", db]) == EXIT_OK
    plain = capsys.readouterr()
    assert plain.err == ""  # (standard error is not a terminal: no bar)
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["verify", "--all", "--db", db]) == EXIT_OK
    assert "verifying the store" in terminal.getvalue()  # the bar, on standard error
    assert capsys.readouterr().out == plain.out  # standard output as without it


def test_verify_json_is_one_object_with_every_verdict(
    played: Played, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(played.db)
    assert main(["verify", "--all", "--json", "--db", db]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert report["exit_code"] == EXIT_OK and report["passed"] == len(played.closed) and report["failed"] == 0
    subjects = {v["subject"] for v in report["verdicts"]}
    assert f"round {played.closed[0]}" in subjects and report["store"]["failed"] == 0
    assert all(v["ok"] and v["checks"] for v in report["verdicts"])
    assert main(["verify", played.closed[1], "--json", "--db", db]) == EXIT_OK
    one = json.loads(capsys.readouterr().out)
    assert [v["status"] for v in one["verdicts"]] == ["PASS"] and one["passed"] == 1
    bundle = tmp_path / "b.json"
    assert main(["export", played.closed[0], "--db", db, "-o", str(bundle)]) == EXIT_OK
    capsys.readouterr()
    assert main(["verify", str(bundle), "--json"]) == EXIT_UNANCHORED
    offline = json.loads(capsys.readouterr().out)
    assert offline["exit_code"] == EXIT_UNANCHORED and offline["bundles"]["unanchored"] == 1
    assert offline["verdicts"][0]["where"] == str(bundle) and offline["verdicts"][0]["status"] == "UNANCHORED"
    assert offline["verdicts"][0]["warnings"][0].startswith("unanchored: ")  # (why, as the text's WARN line)
    with pytest.raises(SystemExit) as usage:
        main(["verify", "--all", "--json", "--quiet", "--db", db])
    assert usage.value.code == EXIT_USAGE


def test_replay_for_a_player_the_round_does_not_concern_prints_nothing(
    played: Played, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "zed.html"
    command = ["replay", played.closed[0], "--db", str(played.db), "--html", str(page), "--player", "zed"]
    assert main(command) == EXIT_USAGE
    printed = capsys.readouterr()
    assert printed.out == "" and "'zed' has no seat, stake or banker's role" in printed.err
    assert not page.exists()
    assert main(["replay", played.closed[0], "--db", str(played.db), "--player", "zed"]) == EXIT_USAGE
    assert capsys.readouterr().out == ""
