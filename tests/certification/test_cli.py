"""``pokdeng rng-report`` and ``pokdeng math-report`` on the command line: the files they write, their exit
codes, the raw battery stream, and what they say when a tool is missing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pokdeng_service.certification.battery import stream_bytes
from pokdeng_service.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_rng_report_writes_its_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["rng-report", "--seed", "cli", "--shoes", "1000", "--battery", "none", "--workers", "1",
                 "--out", str(tmp_path / "out")])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PASS: none of the 17 tests rejects" in out
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == [
        "rng-positions-1-deck.png", "rng-positions-8-deck.png", "rng-pvalues.png", "rng-report.html",
        "rng-report.json",
    ]  # fmt: skip
    report = json.loads((tmp_path / "out" / "rng-report.json").read_text(encoding="utf-8"))
    assert report["format"] == "pokdeng-rng-report" and report["parameters"]["report_seed"] == "cli"
    assert report["parameters"]["shoes"] == {"1": 1000, "8": 1000}


def test_rng_report_without_plots_and_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rng-report", "--shoes", "500", "--decks", "8", "--battery", "none", "--no-plots", "--workers",
                 "1", "--out", str(tmp_path)]) == 0  # fmt: skip
    assert not list(tmp_path.glob("*.png")) and (tmp_path / "rng-report.html").exists()
    assert main(["rng-report", "--decks", "9", "--out", str(tmp_path)]) == 2
    assert main(["rng-report", "--out", str(tmp_path / "no" / "such")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_the_missing_tools_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from pokdeng_service.certification import battery, render

    monkeypatch.setattr(render, "plots_available", lambda: False)
    assert main(["rng-report", "--shoes", "100", "--battery", "none", "--out", str(tmp_path)]) == 2
    assert "pip install 'pokdeng[report]'" in capsys.readouterr().err
    monkeypatch.setattr(battery, "dieharder_path", lambda: None)
    assert main(["rng-report", "--shoes", "100", "--no-plots", "--out", str(tmp_path)]) == 2
    assert "apt-get install dieharder" in capsys.readouterr().err


def test_the_battery_stream_on_standard_output() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pokdeng_service.cli", "rng-report", "--battery-stream", "--seed", "s", "--bytes",
         "5000", "--workers", "1"],
        capture_output=True, timeout=120, cwd=ROOT, check=True,
    )  # fmt: skip
    assert done.stdout == stream_bytes("s", 0, 4)[:5000]


def test_math_report_writes_its_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["math-report", "kingmaker", "--rounds", "500", "--strategy", "reference", "--workers", "1",
                 "--out", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "kingmaker@1" in out and "96.7983%" in out
    report = json.loads((tmp_path / "math-report-kingmaker.json").read_text(encoding="utf-8"))
    assert report["format"] == "pokdeng-math-report" and report["parameters"]["rounds"] == 500
    assert (tmp_path / "math-report-kingmaker.html").read_text(encoding="utf-8").startswith("<!doctype html>")
    assert main(["math-report", "room", "--straights", "--out", str(tmp_path)]) == 2
