"""PostgreSQL failover: the primary stops under load, its synchronous standby is promoted, the service follows.

Two throwaway clusters (``pokdeng_testkit/pgstandby.py``: a primary, a ``pg_basebackup -R`` standby streaming
synchronously, each in a temporary folder on a loopback port, stopped by pid) and one ``pokdeng serve``
whose URL names both (``postgresql://…@127.0.0.1:P1,127.0.0.1:P2/db?target_session_attrs=read-write``).
``pokdeng_testkit.harness.failover`` plays rounds, stops the primary (``pg_ctl stop -m immediate``, by pid), promotes
the standby (``pg_ctl promote``), and checks: health NOT_SERVING then SERVING, commands through again within
10 s of the promotion, every acknowledged command in the store, the commands in flight retried with their request
ids once, every command asked again answered with its first answer, ``pokdeng verify --all`` passes. The
long form (``python -m pokdeng_testkit.harness.failover --seconds 30 --clients 6``)
plays longer with more clients.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pokdeng_testkit.harness.failover import FailoverConfig, FailoverReport, run_failover
from pokdeng_testkit.pgserver import find_pg_bin_dir
from pokdeng_testkit.pgstandby import ReplicatedPostgres
from tests.needs import unavailable

pytestmark = [pytest.mark.postgres, pytest.mark.reliability]


@pytest.fixture
def pair() -> Iterator[ReplicatedPostgres]:
    bin_dir = find_pg_bin_dir()
    if bin_dir is None or not (bin_dir / "pg_basebackup").exists():
        unavailable("PostgreSQL binaries (initdb, postgres, pg_basebackup, pg_ctl) not found")
    replicated = ReplicatedPostgres(bin_dir)
    try:
        replicated.start()
        yield replicated
    finally:
        replicated.stop()


def _checked(report: FailoverReport, config: FailoverConfig) -> None:
    print(report.render())
    assert report.ok, report.render()
    # commands and health come back within the limit of the promotion (not of the stop: how long promoting
    # takes is PostgreSQL's and the machine's), health NOT_SERVING first
    promoted = report.promoted_after
    assert report.resumed_after is not None and report.resumed_after - promoted < config.resume_limit, report.render()
    assert report.not_serving_after is not None and report.serving_after is not None
    assert report.not_serving_after < report.serving_after and report.serving_after - promoted < config.resume_limit
    assert set(report.client_errors) <= {"UNAVAILABLE", "DEADLINE_EXCEEDED"}, report.client_errors
    assert report.rounds_closed > report.rounds_before > 0
    assert report.acked_before > 0 and report.first_answers >= report.in_flight
    assert report.counts["verified"] == report.counts["rounds"] == report.rounds_closed


def test_the_service_follows_a_failover_to_the_synchronous_standby(pair: ReplicatedPostgres, tmp_path: Path) -> None:
    assert ("streaming", "sync") in pair.replication()
    config = FailoverConfig()
    _checked(run_failover(pair, tmp_path, config), config)
