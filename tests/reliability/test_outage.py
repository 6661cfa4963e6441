"""PostgreSQL stops under load: health turns NOT_SERVING, calls fail fast with UNAVAILABLE, nothing is lost.

The test starts a throwaway cluster of its own (``pokdeng_testkit/pgserver.py``: it stops it, so it cannot be
the session's), serves over it with ``pokdeng serve`` (``pokdeng_testkit.harness``), and has three clients
play rounds at their own tables. It stops PostgreSQL (a fast shutdown) while they play: health
must turn NOT_SERVING and calls must fail with UNAVAILABLE (STORE_UNAVAILABLE), not wait out their deadline;
then it starts PostgreSQL again: health turns SERVING, the clients (which retry the same request ids)
finish their rounds, and the audit through the API finds nothing lost or doubled, every round
verified and every wallet adding up.

The bounds come from the settings, with a loaded machine's margin: a call's store waits are bounded by the
pool's connect timeout (twice at most: ``FAIL_FAST``), the probe notices within its interval and a connect
timeout (``HEALTH_TURNS``). The seconds each took are printed, not asserted.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_client.v1 import pokdeng_pb2_grpc as pb_grpc
from pokdeng_service.api.errors import details_of
from pokdeng_service.application.config import postgres_settings
from pokdeng_service.cli.settings import ServeSettings
from pokdeng_testkit.harness.checks import audit_api
from pokdeng_testkit.harness.client import HarnessClient
from pokdeng_testkit.harness.driver import TableDriver, all_acked, make_tables, merged_ledger
from pokdeng_testkit.harness.server import ServerProcess, Store
from pokdeng_testkit.harness.tokens import Tokens
from pokdeng_testkit.keys import VAULT_KEY
from pokdeng_testkit.pgserver import TemporaryPostgres, find_pg_bin_dir
from tests.needs import unavailable

pytestmark = [pytest.mark.postgres, pytest.mark.reliability]

CLIENTS = 3
CONNECT_TIMEOUT = float(postgres_settings("postgresql://u@h/db")["POSTGRES_CONNECT_TIMEOUT"])  # 2 s
PROBE_INTERVAL = ServeSettings.model_fields["probe_interval"].default  # 1 s
MARGIN = 3  # a loaded machine's
FAIL_FAST = MARGIN * 2 * CONNECT_TIMEOUT  # a call's deadline: the server must answer UNAVAILABLE before it
HEALTH_TURNS = MARGIN * (PROBE_INTERVAL + CONNECT_TIMEOUT)  # health follows the store within this
PLAY_SECONDS = 5.0  # the clients start no new round after this (they finish the one in play)
OUTAGE_AFTER = 1.5  # seconds of play before PostgreSQL stops


def _status(stub: Any) -> int | None:
    try:
        return int(stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status)
    except grpc.RpcError:
        return None


def _until_status(stub: Any, wanted: int, seconds: float) -> float:
    """Seconds until health says ``wanted`` (fails after ``seconds``)."""
    started = time.monotonic()
    while _status(stub) != wanted:
        elapsed = time.monotonic() - started
        name = health_pb2.HealthCheckResponse.ServingStatus.Name(wanted)
        assert elapsed < seconds, f"health not {name} in {elapsed:.1f} s"
        time.sleep(0.05)
    return time.monotonic() - started


def _fails_fast(call: Any) -> tuple[str, float, str]:
    started = time.monotonic()
    try:
        call()
    except grpc.RpcError as error:
        details = details_of(error)
        return details.code.name, time.monotonic() - started, details.reason
    return "OK", time.monotonic() - started, ""


def _bounded_without_the_probe(cluster: TemporaryPostgres, tokens: Tokens, wallet: str) -> list[tuple[str, float, str]]:
    """An in-process server with no store probe over the same store: PostgreSQL stops; each call still
    fails within the bounded waits (a broken connection at once, then the pool's 2 s, twice at most)."""
    from pokdeng_service.api.server import create_server
    from pokdeng_service.application import PokdengApp
    from pokdeng_service.application.config import StoreConfig
    from pokdeng_service.auth import TokenStore

    config = StoreConfig(kind="postgres", postgres_url=cluster.info.url, vault_key=VAULT_KEY)
    app = PokdengApp(config.env(0), vault=config.vault())
    store = TokenStore.from_tokens([(tokens.operator, "operator", None)])
    server, port = create_server("127.0.0.1:0", app, tokens=store, probe=False)
    server.start()
    metadata = (("authorization", f"Bearer {tokens.operator}"),)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.WalletServiceStub(channel)
            assert stub.GetWallet(pb.GetWalletRequest(wallet_id=wallet), metadata=metadata, timeout=10).wallet.wallet_id
            cluster.halt()
            read = pb.GetWalletRequest(wallet_id=wallet)
            found = [_fails_fast(lambda: stub.GetWallet(read, metadata=metadata, timeout=FAIL_FAST)) for _ in range(2)]
            request = pb.DepositRequest(request_id="outage:bounded", wallet_id=wallet, amount=3)
            found.append(_fails_fast(lambda: stub.Deposit(request, metadata=metadata, timeout=FAIL_FAST)))
            return found
    finally:
        server.stop(0).wait(10)
        app.close()


def test_postgres_outage_is_visible_bounded_and_loses_nothing(tmp_path: Path) -> None:
    bin_dir = find_pg_bin_dir()
    if bin_dir is None:  # pragma: no cover - the machine image ships PostgreSQL
        unavailable("PostgreSQL binaries not found")
    started = time.monotonic()
    cluster = TemporaryPostgres(bin_dir)
    cluster.start()
    server: ServerProcess | None = None
    try:
        specs = make_tables("outage", CLIENTS)
        wallets = [w for spec in specs for w in spec.wallets]
        tokens = Tokens.for_players(wallets)
        server = ServerProcess(
            Store.postgres(cluster.info.url), tokens.write(tmp_path / "tokens.json"), tmp_path / "server.log", workers=8
        )
        server.start()
        drivers = [
            TableDriver(spec, HarnessClient(server.target, patience=60.0), tokens, name=f"outage-c{i}")
            for i, spec in enumerate(specs)
        ]
        for driver in drivers:
            driver.setup()
        channel = grpc.insecure_channel(server.target)
        health = health_pb2_grpc.HealthStub(channel)
        metadata = (("authorization", f"Bearer {tokens.operator}"),)
        wallets_stub = pb_grpc.WalletServiceStub(channel)
        assert _status(health) == health_pb2.HealthCheckResponse.SERVING

        stop = threading.Event()  # never set: the clients stop at the deadline, after the round in play
        deadline = time.monotonic() + PLAY_SECONDS
        threads = [threading.Thread(target=d.play, args=(stop,), kwargs={"deadline": deadline}) for d in drivers]
        for thread in threads:
            thread.start()
        time.sleep(OUTAGE_AFTER)
        closed_before = sum(len(d.closed) for d in drivers)

        cluster.halt()  # PostgreSQL is gone
        down = _until_status(health, health_pb2.HealthCheckResponse.NOT_SERVING, HEALTH_TURNS)
        read = pb.GetWalletRequest(wallet_id=wallets[0])
        deposit = pb.DepositRequest(request_id="outage:deposit", wallet_id=wallets[0], amount=7)
        failures = [
            _fails_fast(lambda: wallets_stub.GetWallet(read, metadata=metadata, timeout=FAIL_FAST)),
            _fails_fast(lambda: wallets_stub.Deposit(deposit, metadata=metadata, timeout=FAIL_FAST)),
        ]
        time.sleep(1.0)  # the clients keep retrying meanwhile
        cluster.resume()
        up = _until_status(health, health_pb2.HealthCheckResponse.SERVING, HEALTH_TURNS)

        for thread in threads:
            thread.join(timeout=90)
        assert not any(t.is_alive() for t in threads), "a client did not finish"
        channel.close()

        for code, _seconds, reason in failures:  # (not DEADLINE_EXCEEDED: each failed before its deadline)
            assert code == "UNAVAILABLE" and reason == "STORE_UNAVAILABLE", failures
        unexpected = [u for d in drivers for u in d.unexpected]
        assert not unexpected, unexpected
        errors = {code for d in drivers for (_rpc, code) in d.stats.errors}
        assert errors <= {"UNAVAILABLE"}, errors  # only the outage, and every such call was retried
        assert "UNAVAILABLE" in errors and sum(d.stats.retried_calls for d in drivers) >= 1
        assert not [g for d in drivers for g in d.stats.gave_up], "a client gave up"
        closed_after = sum(len(d.closed) for d in drivers)
        assert closed_after > closed_before, (closed_before, closed_after)

        found = audit_api(
            server.target,
            tokens,
            [spec.table_id for spec in specs],
            wallets,
            merged_ledger(drivers),
            all_acked(drivers),
        )
        assert found.ok, found.summary()
        assert found.counts["verified"] == found.counts["rounds"] > 0
        print(
            f"\nhealth NOT_SERVING {down:.2f} s after PostgreSQL stopped; calls failed in "
            f"{', '.join(f'{s:.2f} s' for _c, s, _r in failures)}; SERVING {up:.2f} s after it started again; "
            f"{closed_after} rounds closed ({closed_before} before the outage), {found.counts['verified']} verified; "
            f"{time.monotonic() - started:.1f} s in all"
        )
        assert server.stop() == 0
        server = None

        # without the probe's verdict, the store's own timeouts bound each call (config.postgres_settings)
        bounded = _bounded_without_the_probe(cluster, tokens, wallets[0])
        assert all(code == "UNAVAILABLE" for code, _seconds, _r in bounded), bounded  # each before its deadline
        print(f"without the probe, calls failed in {', '.join(f'{s:.2f} s' for _c, s, _r in bounded)}")
    finally:
        if server is not None:
            server.close()
        cluster.stop()
