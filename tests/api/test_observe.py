"""What operators see: the Prometheus endpoint after a round, and one structured log line per call."""

from __future__ import annotations

import io
import json
import logging
import random
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError
from prometheus_client.parser import text_string_to_metric_families

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.compose import Deployment
from pokdeng_service.logs import JsonFormatter
from pokdeng_testkit.keys import VAULT_KEY

from .client import TOKENS, Api, Choices, bet, error_of, open_table, open_wallets, play_round, seat, start_round
from .conftest import Served, token_store


def _samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=5) as answer:
        text = answer.read().decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def _value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[tuple[Deployment, Any, Api, dict[str, Api]]]:
    config = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "p.sqlite"), vault_key=VAULT_KEY)
    deployment = Deployment.open(config)
    deployment.start()
    server, port = deployment.server("127.0.0.1:0", tokens=token_store(), metrics_port=0, probe_interval=0.2)
    server.start()
    import grpc

    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    ops = Api(channel, TOKENS["operator"], prefix="ops")
    players = {p: Api(channel, TOKENS[p], prefix=p) for p in ("alice", "bob")}
    try:
        yield deployment, server, ops, players
    finally:
        channel.close()
        server.stop(0).wait(10)
        deployment.close()


def _a_round(ops: Api, players: dict[str, Api], table: str, seed: int) -> pb.Round:
    round_id = start_round(ops, table).round_id
    bet(players["alice"], round_id, 1, "alice", 200)
    bet(players["bob"], round_id, 2, "bob", 300)
    return play_round(ops, players, round_id, Choices(random.Random(seed)))


def test_the_metrics_endpoint_shows_the_series_after_a_round(
    deployed: tuple[Deployment, Any, Api, dict[str, Api]], monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment, server, ops, players = deployed
    open_wallets(ops, ["alice", "bob"])
    open_table(ops, "m", pb.PROFILE_CLASSIC, seats=4)
    seat(players["alice"], "m", "alice", 1)
    seat(players["bob"], "m", "bob", 2)
    before = _samples(server.metrics.url)
    _a_round(ops, players, "m", 3)
    # a save that loses to another writer once: the command is tried again, and counted
    app = deployment.service.apps[0]
    save, lost = app.save, []

    def lose_once(*objs: Any, **kwargs: Any) -> Any:
        if not lost:
            lost.append(1)
            raise IntegrityError("a concurrent writer saved first")
        return save(*objs, **kwargs)

    monkeypatch.setattr(app, "save", lose_once)
    ops.cmd("WalletService", "Deposit", pb.DepositRequest(wallet_id="alice", amount=5))
    monkeypatch.undo()
    still_open = start_round(ops, "m").round_id  # a round left open: the clock sees it

    deadline = time.monotonic() + 30  # (a hang guard: the clock reads the log every 0.5 s)
    while True:
        samples = _samples(server.metrics.url)
        if _value(samples, "pokdeng_open_rounds", partition="0") == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.1)

    def grew(name: str, **labels: str) -> float:
        return (_value(samples, name, **labels) or 0) - (_value(before, name, **labels) or 0)

    assert grew("pokdeng_rpcs_total", method="pokdeng.v1.RoundService/PlaceBet", code="OK") == 2
    assert grew("pokdeng_rpcs_total", method="pokdeng.v1.RoundService/StartRound", code="OK") == 2
    assert grew("pokdeng_rpc_seconds_count", method="pokdeng.v1.RoundService/PlaceBet") == 2
    assert (
        _value(samples, "pokdeng_rpc_seconds_bucket", method="pokdeng.v1.RoundService/PlaceBet", le="+Inf") is not None
    )
    assert grew("pokdeng_rounds_closed_total", profile="classic", outcome="settled") == 1
    assert grew("pokdeng_commands_retried_total", command="deposit") == 1
    assert grew("pokdeng_store_seconds_count", operation="save") >= 6  # start, two bets, deal, deposit, start
    assert grew("pokdeng_store_seconds_count", operation="probe") >= 1
    assert _value(samples, "pokdeng_store_up") == 1
    assert _value(samples, "pokdeng_open_rounds", partition="0") == 1, still_open  # the clock read the log since
    lag = _value(samples, "pokdeng_turn_clock_lag_seconds", partition="0")
    assert lag is not None and lag >= 0  # (its size is the machine's: how late a loaded one runs the clock)
    assert _value(samples, "pokdeng_rpcs_in_flight") == 0
    assert _value(samples, "pokdeng_streams_open", kind="events") == 0
    with urllib.request.urlopen(server.metrics.url, timeout=5) as answer:
        text = answer.read().decode()
    assert "# TYPE pokdeng_verification_failures_total counter" in text
    assert server.metrics.host == "127.0.0.1"  # loopback unless told otherwise


def test_one_log_line_per_call_with_its_fields_and_never_a_token_or_an_open_rounds_seed(
    local: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="pokdeng.calls")
    ops, players = local.api("operator"), {p: local.api(p) for p in ("alice", "bob")}
    open_wallets(ops, ["alice", "bob"])
    open_table(ops, "l", pb.PROFILE_CLASSIC, seats=4)
    seat(players["alice"], "l", "alice", 1)
    seat(players["bob"], "l", "bob", 2)
    closed = _a_round(ops, players, "l", 5)
    for _attempt in range(20):  # a round that stays open after the deal (its seed still sealed)
        open_id = start_round(ops, "l").round_id
        bet(players["alice"], open_id, 1, "alice", 100)
        if ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=open_id)).round.phase != pb.ROUND_PHASE_CLOSED:
            break
    else:  # pragma: no cover
        raise AssertionError("twenty deals in a row closed at once")
    ops.round(open_id)
    error_of(lambda: local.api("alice").wallet("bob"))  # refused: a line too

    records = [r for r in caplog.records if r.name == "pokdeng.calls"]
    lines = [getattr(r, "call", None) for r in records]
    assert all(isinstance(line, dict) for line in lines)
    calls: list[dict[str, Any]] = [line for line in lines if isinstance(line, dict)]
    for line in calls:
        assert {"method", "role", "code", "latency_ms"} <= set(line), line
        assert isinstance(line["latency_ms"], float) and line["latency_ms"] >= 0
    bets = [line for line in calls if line["method"] == "pokdeng.v1.RoundService/PlaceBet"]
    assert bets and all(line["request_id"] and line["round_id"] and line["code"] == "OK" for line in bets)
    assert {line["role"] for line in bets} == {"player"} and {line["player"] for line in bets} == {"alice", "bob"}
    started = [line for line in calls if line["method"] == "pokdeng.v1.RoundService/StartRound"]
    assert all(line["table_id"] == "l" and line["round_id"] for line in started)
    assert any(
        line["method"] == "pokdeng.v1.WalletService/OpenWallet" and line["wallet_id"] == "alice" for line in calls
    )
    refused = [line for line in calls if line["code"] == "PERMISSION_DENIED"]
    assert refused and refused[-1]["reason"] == "PERMISSION_DENIED" and refused[-1]["role"] == "player"
    assert len([line for line in calls if line["method"] == "pokdeng.v1.RoundService/GetRound"]) >= 2

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    for record in records:
        handler.emit(record)
    text = stream.getvalue()
    parsed = [json.loads(line) for line in text.splitlines()]
    assert len(parsed) == len(records) and all(p["logger"] == "pokdeng.calls" and "ts" in p for p in parsed)
    assert all(p["method"] for p in parsed)
    everything = text + "\n".join(r.getMessage() for r in caplog.records)
    for token in TOKENS.values():
        assert token not in everything
    seed = local.app.server_seed(open_id)
    for form in (seed.hex(), seed.hex().upper(), seed.decode("latin-1")):
        assert form not in everything
    assert closed.server_seed  # (a closed round's seed is revealed in its record; logs never carry seeds)
