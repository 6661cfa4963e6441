"""What operators see: the Prometheus endpoint after a round, and one structured log line per call."""

from __future__ import annotations

import io
import json
import logging
import platform
import random
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from eventsourcing.persistence import IntegrityError
from prometheus_client.parser import text_string_to_metric_families

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_client.v1 import pokdeng_pb2_grpc as pb_grpc
from pokdeng_core.catalog import ENGINE_VERSION, SHUFFLE_ALGORITHM
from pokdeng_service.api.observe import CallObserver, MetricsEndpoint
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.compose import Deployment
from pokdeng_service.logs import (
    LOG_SUPPRESSED,
    BatchingHandler,
    JsonFormatter,
    TextFormatter,
    registered_rate_limits,
    summarize_rate_limits,
)
from pokdeng_service.version import __version__
from pokdeng_testkit.keys import VAULT_KEY

from .client import TOKENS, Api, Choices, bet, error_of, open_table, open_wallets, play_round, seat, start_round
from .conftest import Served, StartServer, make_app, sqlite_env, token_store


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
    save, lost = app.save, list[int]()

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


LONG = "x" * 31_000  # a request's ids of 31,000 characters each (the request's limit is 64 KiB)
FORGED = "t#1\n2026-01-01 00:00:00,000 CRITICAL pokdeng.integrity: STREAM FORGED round t#1"


def test_calls_refused_without_a_token_cost_the_log_little_and_every_line_not_written_is_counted(
    tmp_path: Path, start_server: StartServer
) -> None:
    """Found: 200 PlaceBet calls without a token and 31,000-character ids wrote 6 MB of log (30 KB a call),
    and a GetRound whose id held a newline wrote a line that looked like an integrity alert. Now each line
    is under 1 KB (its ids cut, with their length and digest), the lines of one peer's refused calls are
    rate-limited (5 a second, a burst of 10), what was not written is counted and summed up, and the text
    format writes the newline as ``\\n``."""
    app = make_app(sqlite_env(tmp_path))
    served = start_server(app)
    out, text = io.StringIO(), io.StringIO()
    handlers = [BatchingHandler(out, JsonFormatter()), BatchingHandler(text, TextFormatter())]
    calls = logging.getLogger("pokdeng.calls")
    level = calls.level
    calls.setLevel(logging.INFO)
    for handler in handlers:
        calls.addHandler(handler)
    counted = LOG_SUPPRESSED.labels("unauthenticated")._value.get()
    rounds = pb_grpc.RoundServiceStub(served.channel)
    try:
        rounds_refused = 0
        for _ in range(200):
            try:
                rounds.PlaceBet(pb.PlaceBetRequest(request_id=LONG, round_id=LONG), timeout=10)
            except grpc.RpcError as error:
                assert error.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.RESOURCE_EXHAUSTED)
                rounds_refused += 1
        forged = error_of(lambda: rounds.GetRound(pb.GetRoundRequest(round_id=FORGED), timeout=10))
        assert forged.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.RESOURCE_EXHAUSTED)
        observer = served.server.runtime.observer
        assert isinstance(observer, CallObserver) and observer.refusals in registered_rate_limits()
        served.stop()  # (its refusals' last summary written: the rest since the writers' last, if any)
        assert observer.refusals not in registered_rate_limits()
        summarize_rate_limits(force=True)  # (what any rate limit still registered has: none of this server's)
        for handler in handlers:
            handler.flush()
    finally:
        for handler in handlers:
            calls.removeHandler(handler)
            handler.close()
        calls.setLevel(level)
        served.stop()
        app.close()
    assert rounds_refused == 200
    raw = out.getvalue().encode()
    lines = [json.loads(line) for line in raw.decode().splitlines()]
    refused = [line for line in lines if line.get("method", "").startswith("pokdeng.v1.RoundService/")]
    said = [line for line in lines if line.get("source") == "unauthenticated"]  # (only this server's: none leaks)
    assert said and all(line["level"] == "WARNING" for line in said)
    suppressed = sum(line["suppressed"] for line in said)
    assert len(refused) + suppressed == 201  # every refused call: a line, or counted and summed up
    assert LOG_SUPPRESSED.labels("unauthenticated")._value.get() - counted == suppressed
    assert 0 < len(refused) < 201 and all(line["role"] == "none" for line in refused)
    assert all(len(line) < 1024 for line in raw.splitlines())
    assert len(raw) / 201 < 1024  # (it was 62 KB a call: both ids whole, every call)
    placed = [line for line in refused if line["method"].endswith("/PlaceBet")]
    assert placed and placed[0]["round_id"].startswith("x" * 128 + "...[31000 chars, sha256 ")
    for line in text.getvalue().splitlines():  # one line a record: none that a caller's id began
        assert "CRITICAL" not in line.split(":", 3)[2], line
    if any(line["method"].endswith("/GetRound") for line in refused):  # (written unless over the peer's rate)
        assert 'round_id="t#1\\n2026-01-01 00:00:00,000 CRITICAL pokdeng.integrity' in text.getvalue()


def _threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name.startswith("pokdeng-metrics")]


def _read_to_the_end(connection: socket.socket) -> bytes:
    """What the server sent before it closed the connection (the server closes it: the timeout only ends a hang)."""
    connection.settimeout(60)
    data = b""
    try:
        while chunk := connection.recv(4096):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def test_the_metrics_endpoint_keeps_a_few_threads_and_cuts_unfinished_requests() -> None:
    """Found: 600 unfinished HTTP requests added 600 threads to the server, which stayed. Now at most
    ``threads`` connections are served at once (the others answered 503 at once), each cut ``timeout``
    seconds after it was accepted, whether it sends nothing more or a byte now and then."""
    before = threading.active_count()
    endpoint = MetricsEndpoint(0, threads=2, timeout=0.5)
    try:
        opened = []
        for _ in range(300):
            connection = socket.create_connection(("127.0.0.1", endpoint.port), timeout=10)
            connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: pokdeng\r\n")  # (no blank line: unfinished)
            opened.append((time.monotonic(), connection))
        assert len(_threads()) <= 2 + 2 and threading.active_count() <= before + 4  # workers, accept, reaper
        held = []
        for started, connection in opened:
            answer = _read_to_the_end(connection)
            if not answer.startswith(b"HTTP/1.0 503"):
                held.append((answer, time.monotonic() - started))
            connection.close()
        assert held and all(answer == b"" for answer, _ in held)  # cut, never answered
        assert all(seconds >= 0.5 for _, seconds in held)  # (not before its time)
        assert endpoint.server.refused == 300 - len(held)
        # a client that trickles its request a byte at a time is cut too (at its deadline, not per byte)
        trickle = socket.create_connection(("127.0.0.1", endpoint.port), timeout=10)
        started = time.monotonic()
        try:
            for byte in b"GET /metrics HTTP/1.1\r\n" * 100:
                trickle.sendall(bytes([byte]))
                time.sleep(0.05)
            raise AssertionError("a trickled request was never cut")
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert time.monotonic() - started >= 0.5
        trickle.close()
        assert endpoint.server.cut >= 1  # (by the reaper: no single read waited its timeout)
        assert len(_threads()) <= 4
        with urllib.request.urlopen(endpoint.url, timeout=10) as answer:  # and it still serves
            assert b"pokdeng_build_info" in answer.read()
    finally:
        endpoint.close()


def test_the_build_is_a_metric() -> None:
    endpoint = MetricsEndpoint(0)
    try:
        samples = _samples(endpoint.url)
    finally:
        endpoint.close()
    labels = {
        "version": __version__,
        "engine_version": ENGINE_VERSION,
        "shuffle": SHUFFLE_ALGORITHM,
        "python_version": platform.python_version(),
    }
    assert _value(samples, "pokdeng_build_info", **labels) == 1
