"""Rates: one token bucket per caller and class of methods, applied once in the wrapper.

Found from the outside: a player sending GetRound as fast as 16 connections allow (about 1,150 calls/s)
slowed another caller's GetTable from 1.1 ms to 14 ms at the median, within every cap on calls in
flight. Now each caller (a token; a host, for calls without one) has a bucket per class of methods
(reads, commands, streams opened): a call that finds it empty is refused at once, RESOURCE_EXHAUSTED
with ErrorInfo ``RATE_LIMITED`` and RetryInfo (the time until the bucket holds a token). The operator
has no bucket. ``bench/flood.py`` measures the operator's latency under such a flood.
"""

from __future__ import annotations

import os
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.errors import details_of
from pokdeng_service.api.methods import RPCS
from pokdeng_service.api.rates import DEFAULT_RATES, RATE_CLASSES, Buckets, Rate
from pokdeng_service.cli.main import build_parser
from pokdeng_service.cli.serve_flags import FLAGS
from pokdeng_service.cli.settings import ServeSettings

from .client import COMMANDS, error_of, open_table, open_wallets
from .conftest import StartServer, make_app, sqlite_env

SLOW = 0.01  # tokens a second: none comes back within a test


def test_a_bucket_holds_its_burst_refills_at_its_rate_and_says_when_the_next_token_comes() -> None:
    buckets = Buckets({"reads": Rate(4.0, 2), "commands": Rate(0, 0)})
    assert [buckets.wait("a", "reads", now=100.0) for _ in range(2)] == [0.0, 0.0]  # the burst
    assert buckets.wait("a", "reads", now=100.0) == pytest.approx(0.25)  # one token every 1/4 s
    assert buckets.wait("b", "reads", now=100.0) == 0.0  # another caller's bucket is full
    assert buckets.wait("a", "reads", now=100.1) == pytest.approx(0.15)  # a refused call takes nothing
    assert buckets.wait("a", "reads", now=100.25) == 0.0
    assert buckets.wait("a", "commands", now=100.0) == 0.0  # a rate of 0: no limit
    assert buckets.wait("a", "streams", now=100.0) == 0.0  # a class not given: no limit
    assert buckets.wait("a", "reads", now=200.0) == 0.0  # refilled, to the burst only
    assert buckets.wait("a", "reads", now=200.0) == 0.0
    assert buckets.wait("a", "reads", now=200.0) > 0
    assert buckets.forget_full(now=200.0) == 1 and len(buckets) == 1  # b's bucket is full again: forgotten
    assert buckets.forget_full(now=1000.0) == 1 and len(buckets) == 0
    with pytest.raises(ValueError):
        Buckets({"writes": Rate(1, 1)})
    with pytest.raises(ValueError):
        Rate(1.0, 0)


def test_every_method_has_its_class() -> None:
    classes = {rpc.method: rpc.rate_class for rpc in RPCS}
    assert set(classes.values()) == set(RATE_CLASSES)
    assert {m for m, c in classes.items() if c == "commands"} == {*COMMANDS, "SignTreeHead"}
    assert {m for m, c in classes.items() if c == "streams"} == {"WatchTable", "WatchRound", "SubscribeEvents"}


def test_a_flooder_is_throttled_with_retry_info_and_another_caller_and_the_operator_are_not(
    tmp_path: Path, start_server: StartServer
) -> None:
    app = make_app(sqlite_env(tmp_path))
    rates = {"reads": Rate(SLOW, 5), "commands": Rate(SLOW, 2), "streams": Rate(SLOW, 1)}
    served = start_server(app, rates=rates)
    try:
        ops, alice, bob = served.api("operator"), served.api("alice"), served.api("bob")
        open_wallets(ops, ["alice", "bob"])
        open_table(ops, "t", pb.PROFILE_CLASSIC, seats=2)
        get = alice.method("WalletService", "GetWallet")
        request = pb.GetWalletRequest(wallet_id="alice")
        with futures.ThreadPoolExecutor(8) as pool:  # alice floods: 40 reads from 8 threads
            flood = [pool.submit(get, request, metadata=alice.metadata, timeout=10) for _ in range(40)]
            outcomes = [f.exception() for f in flood]
        refused = [details_of(e) for e in outcomes if isinstance(e, grpc.RpcError)]
        assert len(refused) == 35 and len(outcomes) - len(refused) == 5  # her burst served, the rest refused
        for error in refused:
            assert error.code == grpc.StatusCode.RESOURCE_EXHAUSTED and error.reason == "RATE_LIMITED", error
            assert error.metadata == {"class": "reads", "rate": f"{SLOW:g}", "burst": "5"}
            assert error.retry_delay is not None and 0 < error.retry_delay <= 1 / SLOW
        assert all(bob.wallet("bob").wallet_id == "bob" for _ in range(5))  # another player: his own bucket
        assert all(ops.wallet("alice").wallet_id == "alice" for _ in range(50))  # the operator: none

        # commands, and streams opened, have buckets of their own; a refused command records nothing
        take = pb.TakeSeatRequest(table_id="nowhere", player="alice", seat=1)
        for _ in range(2):  # (her tokens are taken, whatever the application answers)
            assert error_of(lambda: alice.cmd("TableService", "TakeSeat", take)).code() == grpc.StatusCode.NOT_FOUND
        before = app.max_position
        refused_command = details_of(error_of(lambda: alice.cmd("TableService", "TakeSeat", take)))
        assert refused_command.reason == "RATE_LIMITED" and (refused_command.metadata or {})["class"] == "commands"
        assert app.max_position == before
        watch = alice.method("TableService", "WatchTable")
        first = watch(pb.WatchTableRequest(table_id="t"), metadata=alice.metadata, timeout=10)
        assert next(first).HasField("event")
        second = watch(pb.WatchTableRequest(table_id="t"), metadata=alice.metadata, timeout=10)
        refused_stream = details_of(error_of(lambda: next(second)))
        assert refused_stream.reason == "RATE_LIMITED" and (refused_stream.metadata or {})["class"] == "streams"
        first.cancel()
    finally:
        served.stop()
        app.close()


def test_calls_without_a_token_share_the_bucket_of_their_host(tmp_path: Path, start_server: StartServer) -> None:
    app = make_app(sqlite_env(tmp_path))
    served = start_server(app, rates={"reads": Rate(SLOW, 3)})
    try:
        health: Any = health_pb2_grpc.HealthStub(served.channel)
        for _ in range(3):
            assert (
                health.Check(health_pb2.HealthCheckRequest(), timeout=5).status
                == health_pb2.HealthCheckResponse.SERVING
            )
        refused = details_of(error_of(lambda: health.Check(health_pb2.HealthCheckRequest(), timeout=5)))
        assert refused.code == grpc.StatusCode.RESOURCE_EXHAUSTED and refused.reason == "RATE_LIMITED"
        assert "unauthenticated caller of this host" in refused.message
        open_wallets(served.api("operator"), ["alice"])
        assert served.api("alice").wallet("alice").wallet_id == "alice"  # a token's calls: its own bucket
    finally:
        served.stop()
        app.close()


# --- the settings ---------------------------------------------------------------------------------


def _settings(argv: list[str]) -> ServeSettings:
    return ServeSettings.from_args(build_parser().parse_args(["serve", *argv]))


def test_the_rates_are_set_by_flags_and_the_environment_and_default_to_the_declared_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [k for k in os.environ if k.startswith("POKDENG_")]:
        monkeypatch.delenv(name)
    assert _settings([]).server_options()["rates"] == dict(DEFAULT_RATES)
    for rate_class, rate in DEFAULT_RATES.items():  # the flags' help names the declared defaults
        assert f"default {rate.per_second:g};" in FLAGS[f"--rate-{rate_class}"]["help"]
        assert f"default {rate.burst})" in FLAGS[f"--rate-{rate_class}-burst"]["help"]
    monkeypatch.setenv("POKDENG_RATE_COMMANDS", "0")
    monkeypatch.setenv("POKDENG_RATE_READS", "5")
    rates = _settings(["--rate-reads", "7.5", "--rate-reads-burst", "9"]).server_options()["rates"]
    assert rates["reads"] == Rate(7.5, 9)  # the flag over the environment
    assert rates["commands"] == Rate(0, DEFAULT_RATES["commands"].burst) and not rates["commands"].on
    assert rates["streams"] == DEFAULT_RATES["streams"]
