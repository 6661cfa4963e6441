"""Crash and restart at the server level: ``pokdeng serve`` SIGKILLed under concurrent clients.

The short form of ``pokdeng_testkit/harness/crash.py`` (``python -m pokdeng_testkit.harness.crash --help`` for the
long form; ``--long`` here makes 300 kills): 8 clients, each at its own table, play rounds through the gRPC API
with request ids derived from the round's state; the server is SIGKILLed 15 times (a random 0.05-0.4 s
after it serves again; now and then during its start-up too) and restarted on the same port. The
clients retry their last request id on UNAVAILABLE and carry on from GetRound/GetLegalCommands.
At the end the clients stop mid-round, the server is killed once more, the rounds left open must
be resumable (half are voided, half finished), and the checks run through the API and in the
store: nothing lost or doubled, no double payout, statements equal balances, money balances to
zero, every closed round verifies. About half a minute per store (a kill and restart costs the
server's start-up, about 1.3 s here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pokdeng_testkit.harness.crash import CrashConfig, run_crash
from pokdeng_testkit.harness.server import Store
from tests.needs import long_run

pytestmark = pytest.mark.reliability

KILLS = 300 if long_run() else 15
CLIENTS = 8


def test_killed_server_resumes_and_nothing_is_lost_or_doubled(harness_store: Store, tmp_path: Path) -> None:
    report = run_crash(harness_store, tmp_path, CrashConfig(kills=KILLS, clients=CLIENTS))
    print(report.render())
    assert not report.problems, report.render()  # (every kill it was set made: a count, however long they took)
    assert not report.unexpected, report.unexpected
    assert report.kills == KILLS + 1  # while serving, then the final kill
    # the clients saw the server go away and came back: only UNAVAILABLE (and deadline) errors, all retried
    assert set(report.client_errors) <= {"UNAVAILABLE", "DEADLINE_EXCEEDED"}, report.client_errors
    assert report.client_errors.get("UNAVAILABLE", 0) > 0
    assert not report.server_errors, report.server_errors
    # kills landed inside rounds, and every client kept playing
    assert report.rounds_interrupted >= KILLS // 3, report.rounds_interrupted  # (8 clients keep calls in flight)
    assert min(report.rounds_per_client.values()) >= 1, report.rounds_per_client
    # the final kill left rounds open: each was resumable, then voided or finished
    assert report.open_after_final_kill
    assert report.voided_at_end + report.finished_at_end == len(report.open_after_final_kill)
    assert report.counts["verified"] == report.counts["rounds"]
