"""The event feed: every event once, in order, in batches, live, and across a reconnect from a position."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from pokdeng_client import events
from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_testkit.keys import VAULT_KEY

from .client import Api, bet, error_of, open_table, open_wallets, payload, start_round
from .conftest import Served, StartServer, make_app, sqlite_env


def _ante_round(ops: Api, players: dict[str, Api], table_id: str) -> None:
    round_id = start_round(ops, table_id).round_id
    for number, who in ((1, "alice"), (2, "bob"), (3, "alice")):
        bet(players[who], round_id, number, who, 200)
    ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))


def subscribe(
    api: Api, after: int, batch: int, *, stop_at_head: bool = False, partition: int = 0
) -> Iterator[pb.SubscribeEventsResponse]:
    request = pb.SubscribeEventsRequest(
        after_position=after, batch_size=batch, stop_at_head=stop_at_head, partition=partition
    )
    stream: Iterator[pb.SubscribeEventsResponse] = api.method("EventService", "SubscribeEvents")(
        request, metadata=api.metadata, timeout=60
    )
    return stream


NO_POLL = 3600.0  # an open stream's poll interval that never comes within a test's time


@pytest.fixture
def unpolled(store_env: dict[str, str], start_server: StartServer) -> Iterator[Served]:
    """A server whose open event streams are never polled: only a command's wake-up brings them new events."""
    app = make_app(store_env)
    running = start_server(app, poll_interval=NO_POLL)
    try:
        yield running
    finally:
        running.stop()
        app.close()


@pytest.mark.each_store
def test_every_event_once_in_order_across_a_reconnect(unpolled: Served) -> None:
    served = unpolled
    ops, auditor, players = served.api("operator"), served.api("auditor"), served.players()
    open_wallets(ops, ["alice", "bob"])
    open_table(ops, "a", pb.PROFILE_ANTE, min_stake=100, max_stake=1000, seats=0)
    _ante_round(ops, players, "a")
    head = served.app.max_position
    received: list[pb.Notification] = []

    stream = subscribe(auditor, 0, 7)
    for batch in stream:  # read about half, then drop the connection
        assert 0 < len(batch.events) <= 7 and batch.last_position == batch.events[-1].position
        received.extend(batch.events)
        if batch.last_position >= head // 2:
            break
    stream.cancel()  # type: ignore[attr-defined]
    resume_from = received[-1].position

    _ante_round(ops, players, "a")  # written while the subscriber is away
    stream = subscribe(auditor, resume_from, 7)
    for batch in stream:
        received.extend(batch.events)
        if batch.caught_up and batch.last_position == served.app.max_position:
            break
    # live: a new command wakes the open stream (never polled: without the wake-up it would wait out its deadline)
    ops.cmd("WalletService", "Deposit", pb.DepositRequest(wallet_id="alice", amount=5))
    for batch in stream:
        received.extend(batch.events)
        if batch.last_position == served.app.max_position:
            break
    stream.cancel()  # type: ignore[attr-defined]

    expected = served.app.read_notifications(0, 10_000)
    assert [n.position for n in received] == [n.position for n in expected]  # once each, in order
    stream_kinds = {
        n.stream_kind: pb.StreamKind.Name(n.stream_kind).removeprefix("STREAM_KIND_").lower() for n in received
    }
    assert [(stream_kinds[n.stream_kind], n.stream_id, n.event.sequence) for n in received] == [
        (n.stream, n.stream_id, n.stream_version) for n in expected
    ]
    assert all(
        events.kind_text(n.event.WhichOneof("event") or "") == e.kind for n, e in zip(received, expected, strict=True)
    )
    assert all(payload(n.event) == e.data for n, e in zip(received, expected, strict=True))
    assert set(stream_kinds.values()) >= {"wallet", "table", "round"}
    last_wallet_event = [n for n in received if n.stream_kind == pb.STREAM_KIND_WALLET][-1]
    assert last_wallet_event.event.WhichOneof("event") == "wallet_deposited" and last_wallet_event.stream_id == "alice"
    assert last_wallet_event.event.wallet_deposited.amount == 5


def test_stop_at_head_ends_the_stream_and_an_empty_log_says_caught_up(local: Served) -> None:
    auditor = local.api("auditor")
    (only,) = list(subscribe(auditor, 0, 100, stop_at_head=True))
    assert (list(only.events), only.last_position, only.caught_up) == ([], 0, True)
    ops = local.api("operator")
    open_wallets(ops, ["alice"])
    head = local.app.max_position
    batches = list(subscribe(auditor, 0, 2, stop_at_head=True))
    assert [len(b.events) for b in batches[:-1]] == [2] * (head // 2) and batches[-1].caught_up
    assert sum(len(b.events) for b in batches) == head
    after = list(subscribe(auditor, head - 1, 1000, stop_at_head=True))
    assert [n.position for b in after for n in b.events] == [head]


def test_bad_subscriptions_and_the_subscription_limit(tmp_path: Path, start_server: StartServer) -> None:
    app = make_app(sqlite_env(tmp_path))
    try:
        served = start_server(app, max_subscriptions=1)
        auditor = served.api("auditor")
        error = error_of(lambda: next(subscribe(auditor, -1, 5000)))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        first = subscribe(auditor, 0, 10)
        next(first)  # caught up on the empty log: the subscription holds its place
        error = error_of(lambda: next(subscribe(auditor, 0, 10)))
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        first.cancel()  # type: ignore[attr-defined]
        deadline = time.monotonic() + 30  # (a hang guard: the server notices within its poll interval)
        while True:  # the place frees once the server notices the cancellation
            try:
                next(subscribe(auditor, 0, 10, stop_at_head=True))
                break
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline
                time.sleep(0.05)
        served.stop()
    finally:
        app.close()


def test_each_partition_has_its_own_feed(tmp_path: Path, start_server: StartServer) -> None:
    """A deployment over two stores: the feed of partition 1 holds the "asia/" lobby's events, partition 0 not."""
    from pokdeng_service.application.config import StoreConfig
    from pokdeng_service.application.partitions import PartitionedPokdeng

    config = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "p.sqlite"), partitions=2, vault_key=VAULT_KEY)
    service = PartitionedPokdeng.open(config)
    try:
        served = start_server(service)
        ops, auditor = served.api("operator"), served.api("auditor")
        open_wallets(ops, ["asia/alice", "asia/bob"])
        open_table(ops, "asia/t", pb.PROFILE_ANTE, min_stake=100, max_stake=1000, seats=0)
        round_id = start_round(ops, "asia/t").round_id
        bet(ops, round_id, 1, "asia/alice", 200)
        bet(ops, round_id, 2, "asia/bob", 200)
        ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
        one = [n for b in subscribe(auditor, 0, 1000, stop_at_head=True, partition=1) for n in b.events]
        zero = [n for b in subscribe(auditor, 0, 1000, stop_at_head=True) for n in b.events]
        assert [n.position for n in one] == [n.position for n in service.apps[1].read_notifications(0, 1000)]
        assert "asia/t" in {n.stream_id for n in one} and round_id in {n.stream_id for n in one}
        assert not {n.stream_id for n in zero} & {"asia/t", round_id, "asia/alice"}
        error = error_of(lambda: next(subscribe(auditor, 0, 10, partition=2)))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        served.stop()
    finally:
        service.close()


def test_recall_reaches_every_partition(tmp_path: Path, start_server: StartServer) -> None:
    """`pokdeng serve --partitions 2` keeps read models for each store: ListRounds finds a
    table's and a player's rounds in whichever partition their shard puts them."""
    from pokdeng_service.application.config import StoreConfig
    from pokdeng_service.application.partitions import PartitionedPokdeng
    from pokdeng_service.readmodels.partitioned import PartitionedReadModels

    config = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "r.sqlite"), partitions=2, vault_key=VAULT_KEY)
    service = PartitionedPokdeng.open(config)
    models = PartitionedReadModels(service, config)
    try:
        served = start_server(service, read_models=models)
        ops = served.api("operator")
        played: dict[str, list[str]] = {}
        for table, player in (("asia/t", "asia/alice"), ("t0", "alice")):
            assert service.partition(table) == service.partition(player, "wallet")
            open_wallets(ops, [player])
            open_table(ops, table, pb.PROFILE_ANTE, min_stake=100, max_stake=1000, seats=0)
            for _ in range(3):
                round_id = start_round(ops, table).round_id
                bet(ops, round_id, 1, player, 200)
                ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
                played.setdefault(table, []).append(round_id)
                played.setdefault(player, []).append(round_id)
        assert {service.partition("asia/t"), service.partition("t0")} == {0, 1}
        models.catch_up()
        for table, player in (("asia/t", "asia/alice"), ("t0", "alice")):
            for fields in ({"table_id": table}, {"player": player}):
                listed = ops.get("RoundService", "ListRounds", pb.ListRoundsRequest(**fields))  # type: ignore[arg-type]
                assert [r.round_id for r in listed.rounds] == list(reversed(played[table])), fields
        everyone = ops.get("RoundService", "ListRounds", pb.ListRoundsRequest(page_size=100)).rounds
        assert {r.round_id for r in everyone} == set(played["asia/t"]) | set(played["t0"])
        served.stop()
    finally:
        models.stop()
        service.close()
