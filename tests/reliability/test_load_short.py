"""The load bench's short form (``python bench/load.py --short``): every client count plays rounds
with no error at all. Throughput is reported, never asserted (it depends on the machine)."""

from __future__ import annotations

from pathlib import Path

from bench.harness.server import Store
from bench.load import SHORT_CLIENTS, SHORT_SECONDS, render, run_load


def test_short_load_plays_rounds_without_errors(harness_store: Store, tmp_path: Path) -> None:
    results = []
    for clients in SHORT_CLIENTS:
        result = run_load(harness_store, tmp_path, clients, SHORT_SECONDS, baseline=False)
        results.append(result)
        assert result.errors == {}, result.errors
        assert result.notes == [], result.notes
        assert result.rounds > 0 and result.calls > 0
    print(render(results))
