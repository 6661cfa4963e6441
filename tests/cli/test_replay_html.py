"""``pokdeng replay ROUND --html FILE`` writes one standalone page that a browser shows step by step."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from pokdeng_service.cli import EXIT_OK, main

from .test_cli import played  # noqa: F401 - the fixture

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _page(played: tuple[Path, list[str]], tmp_path: Path) -> tuple[Path, str]:  # noqa: F811
    db, rounds = played
    page = tmp_path / "round.html"
    assert main(["replay", rounds[0], "--db", str(db), "--html", str(page)]) == EXIT_OK
    return page, rounds[0]


def test_the_page_is_standalone(played: tuple[Path, list[str]], tmp_path: Path) -> None:  # noqa: F811
    page, round_id = _page(played, tmp_path)
    text = page.read_text(encoding="utf-8")
    assert "<script" not in text and "http://" not in text and "https://" not in text  # nothing to fetch
    for needle in (round_id, "cards_dealt", "bet_settled", "round_closed", "PASS", "commitment", 'class="card'):
        assert needle in text
    assert any(suit in text for suit in "♠♥♣♦")


@pytest.mark.skipif(
    CHROMIUM is None and os.environ.get("CI") != "true", reason="Chromium is not installed (apt-get install chromium)"
)
def test_headless_chromium_renders_the_round(played: tuple[Path, list[str]], tmp_path: Path) -> None:  # noqa: F811
    page, round_id = _page(played, tmp_path)
    assert CHROMIUM is not None, "CI=true: Chromium must be installed (.ci/run installs it)"
    with tempfile.TemporaryDirectory() as profile:
        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
        ]
        dom = subprocess.run(
            [CHROMIUM, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        shot = tmp_path / "round.png"
        subprocess.run(
            [CHROMIUM, *flags, "--window-size=1200,900", f"--screenshot={shot}", page.as_uri()],
            capture_output=True,
            timeout=120,
            check=True,
        )
    assert f"Round {round_id}" in dom and "showdown" in dom and "round closed" in dom
    assert shot.exists() and shot.stat().st_size > 10_000
