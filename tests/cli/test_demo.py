"""``pokdeng demo`` plays every profile through a real gRPC server and checks the money and one round."""

from __future__ import annotations

import io

from rich.console import Console

from pokdeng_service.cli.demo import run_demo


def test_demo_plays_every_profile_and_verifies() -> None:
    buffer = io.StringIO()
    assert run_demo(rounds=2, seed=3, console=Console(file=buffer, width=120)) == 0
    out = buffer.getvalue()
    for profile in ("classic", "ante", "room", "kingmaker"):
        assert profile in out
    assert "= 0 balanced" in out
    assert "verified offline: PASS" in out
