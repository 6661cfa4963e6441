"""Partitions on separate PostgreSQL servers, served by two ``pokdeng serve`` processes, one killed mid-load.

Two throwaway clusters (``pokdeng_testkit/pgserver.py``), one per partition, and two replicas with the same
partition map (``--partition-url 0=URL0 --partition-url 1=URL1``). Clients whose channels spread their
calls over both replicas (gRPC round robin) play tables of both partitions; replica A is SIGKILLed
mid-load (its calls in flight are retried with the same request ids on B) and started again.
``pokdeng_testkit.harness.partition_replicas`` then checks: the replicas agree, every command asked again (through
either replica) gets its first answer, nothing lost or doubled in either partition (through the API and in
each store), and ``pokdeng verify --all`` over the map passes. It measures the version conflicts in each
store by the stream they hit, the round log (``RoundLog``) among them (docs/reliability.md). The long form:
``python -m pokdeng_testkit.harness.partition_replicas --seconds 30 --tables 4``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pokdeng_testkit.harness.partition_replicas import (
    PartitionReplicaConfig,
    PartitionReplicaReport,
    run_partition_replicas,
)
from pokdeng_testkit.pgserver import TemporaryPostgres, find_pg_bin_dir
from tests.needs import unavailable

pytestmark = [pytest.mark.postgres, pytest.mark.reliability]


@pytest.fixture
def clusters() -> Iterator[list[TemporaryPostgres]]:
    bin_dir = find_pg_bin_dir()
    if bin_dir is None:
        unavailable("PostgreSQL binaries (initdb, postgres) not found")
    started: list[TemporaryPostgres] = []
    try:
        for _ in range(2):
            cluster = TemporaryPostgres(bin_dir)
            started.append(cluster)
            cluster.start()
        yield started
    finally:
        for cluster in started:
            cluster.stop()


def _run(clusters: list[TemporaryPostgres], tmp_path: Path, config: PartitionReplicaConfig) -> PartitionReplicaReport:
    report = run_partition_replicas([c.info.url for c in clusters], tmp_path, config, [c.log_file for c in clusters])
    print(report.render())
    assert report.ok, report.render()
    assert not report.server_errors, report.server_errors
    assert set(report.client_errors) <= {"UNAVAILABLE", "ABORTED", "DEADLINE_EXCEEDED"}, report.client_errors
    assert min(report.rounds_per_partition.values()) >= 3, report.rounds_per_partition
    assert report.served_after_restart > 0
    assert report.verify["map"] == 0
    rounds = sum(report.rounds_per_partition.values())
    assert report.counts["verified"] == report.counts["rounds"] == rounds
    return report


def test_two_replicas_serve_partitions_on_two_servers_through_a_kill(
    clusters: list[TemporaryPostgres], tmp_path: Path
) -> None:
    _run(clusters, tmp_path, PartitionReplicaConfig())
