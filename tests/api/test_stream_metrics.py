"""A feed asked to start past its log's head says so, open watches are counted, restarts are a counter.

Found from the outside: SubscribeEvents with ``after_position`` past the head answered ``caught_up`` at
that position (a client resuming from a position of another store, or a bug, waited for ever); open
WatchTable and WatchRound streams were missing from ``pokdeng_streams_open``; and
``pokdeng_read_models_restarts``, a count that only grows, was a gauge.
"""

from __future__ import annotations

import time
from pathlib import Path

import grpc
from prometheus_client import REGISTRY

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.errors import details_of
from pokdeng_service.compose import RUNNING

from .client import error_of, open_table, open_wallets
from .conftest import Served, StartServer, make_app, sqlite_env


def _subscribe(served: Served, after: int) -> list[pb.SubscribeEventsResponse]:
    auditor = served.api("auditor")
    request = pb.SubscribeEventsRequest(after_position=after, batch_size=100, stop_at_head=True)
    return list(auditor.method("EventService", "SubscribeEvents")(request, metadata=auditor.metadata, timeout=10))


def test_a_feed_after_a_position_past_the_head_is_out_of_range(local: Served) -> None:
    open_wallets(local.api("operator"), ["alice"])
    head = int(local.app.max_position)
    assert head > 0
    (at_head,) = _subscribe(local, head)  # at the head: caught up, nothing to send
    assert at_head.caught_up and at_head.last_position == head and not at_head.events
    refused = details_of(error_of(lambda: _subscribe(local, head + 1)))
    assert refused.code == grpc.StatusCode.OUT_OF_RANGE and refused.reason == "OUT_OF_RANGE", refused
    assert refused.metadata == {"position": str(head + 1), "head": str(head)}
    assert local.server.runtime.streams.get("events", 0) == 0  # (its place is free again)


def _open(kind: str) -> float | None:
    return REGISTRY.get_sample_value("pokdeng_streams_open", {"kind": kind})


def test_open_watches_are_in_the_streams_gauge(tmp_path: Path, start_server: StartServer) -> None:
    app = make_app(sqlite_env(tmp_path))
    served = start_server(app)  # (the gauges read the server bound last: this one)
    try:
        ops, alice = served.api("operator"), served.api("alice")
        open_table(ops, "t", pb.PROFILE_CLASSIC, seats=2)
        assert _open("watch") == 0
        watch = alice.method("TableService", "WatchTable")
        streams = [watch(pb.WatchTableRequest(table_id="t"), metadata=alice.metadata, timeout=30) for _ in range(2)]
        for stream in streams:
            assert next(stream).HasField("event")
        assert _open("watch") == 2 == served.server.runtime.streams["watch"]
        for stream in streams:
            stream.cancel()
        deadline = time.monotonic() + 10
        while _open("watch") != 0:
            assert time.monotonic() < deadline, _open("watch")
            time.sleep(0.01)
        assert {_open(kind) for kind in ("events", "health", "reflection")} == {0}
    finally:
        served.stop()
        app.close()


def test_the_read_models_restarts_are_a_counter() -> None:
    (restarts,) = [family for family in RUNNING.collect() if family.name == "pokdeng_read_models_restarts"]
    assert restarts.type == "counter"
    assert [sample.name for sample in restarts.samples] == ["pokdeng_read_models_restarts_total"]
