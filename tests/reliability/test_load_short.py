"""The load bench's short form (``python bench/load.py --short``): every client count plays rounds
with no error at all. Throughput is reported, never asserted (it depends on the machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pokdeng_testkit.harness.load import SHORT_CLIENTS, SHORT_SECONDS, LoadResult, render, run_load
from pokdeng_testkit.harness.server import Store


@pytest.mark.reliability
def test_short_load_plays_rounds_without_errors(harness_store: Store, tmp_path: Path) -> None:
    results = []
    for clients in SHORT_CLIENTS:
        result = run_load(harness_store, tmp_path, clients, SHORT_SECONDS, baseline=False)
        results.append(result)
        assert result.errors == {}, result.errors
        assert result.notes == [], result.notes
        assert result.rounds > 0 and result.calls > 0
    print(render(results))


def test_the_budget_splits_the_servers_cpu_a_round() -> None:
    result = LoadResult(
        "sqlite", 8, 10.0, 100, 1000, {}, [], 2000.0, [], 2.5, 700, server_cpu=1.2, bare_call_cpu=0.0003, raw_cpu=0.2
    )
    # 12 ms a round of 10 calls: 3 ms of bare calls, 2 ms of raw appends, 7 ms of the service's own; the raw
    # rate is 100 / 2.5 = 40 rounds/s, so 50% of it allows 1000 / 20 = 50 ms a round
    assert result.budget() == (
        "server CPU 0.12 cores, 12.00 ms a round (10.0 calls, 1200 us a call): bare transport 3.00 ms "
        "(300 us a health check), raw appends' CPU 2.00 ms, own work 7.00 ms; 50% of the raw rate allows "
        "50.00 ms a round of one core"
    )
    assert LoadResult("sqlite", 8, 10.0, 100, 1000, {}, []).budget() is None  # (no baseline: nothing to say)


@pytest.mark.reliability
def test_a_run_with_its_baselines_reads_the_servers_cpu(tmp_path: Path) -> None:
    result = run_load(
        Store.sqlite(tmp_path / "load.sqlite"), tmp_path, 1, 1.0, raw_store=Store.sqlite(tmp_path / "raw.sqlite")
    )
    assert result.errors == {} and result.rounds > 0
    assert result.server_cpu is not None and result.server_cpu > 0
    assert result.bare_call_cpu is not None and result.bare_call_cpu > 0
    assert result.raw_cpu is not None and result.raw_cpu > 0 and result.raw_seconds is not None
    assert result.budget() is not None
