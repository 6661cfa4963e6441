"""The server itself: health, reflection, binding, development mode, graceful shutdown, ``serve`` and signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.listening import bind_address
from pokdeng_service.api.server import SERVICE_NAMES, create_server
from pokdeng_service.auth import token_digest

from .client import TOKENS, error_of, open_wallets
from .conftest import Served, StartServer, make_app, sqlite_env
from .test_errors import Faulty

ROOT = Path(__file__).resolve().parents[2]


def test_health_answers_for_the_server_and_every_service_without_a_token(local: Served) -> None:
    health: Any = health_pb2_grpc.HealthStub(local.channel)
    for name in ("", *SERVICE_NAMES):
        assert (
            health.Check(health_pb2.HealthCheckRequest(service=name)).status == health_pb2.HealthCheckResponse.SERVING
        )
    error = error_of(lambda: health.Check(health_pb2.HealthCheckRequest(service="pokdeng.v1.Nothing")))
    assert error.code() == grpc.StatusCode.NOT_FOUND


class _Bearer(grpc.StreamStreamClientInterceptor):
    """Adds a bearer token to streaming calls (the reflection client sends no metadata of its own)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        metadata = (*(details.metadata or ()), ("authorization", f"Bearer {self.token}"))
        return continuation(details._replace(metadata=metadata), requests)


def with_token(channel: grpc.Channel, token: str) -> grpc.Channel:
    return grpc.intercept_channel(channel, _Bearer(token))


def test_reflection_lists_and_describes_the_services(local: Served) -> None:
    # outside development mode reflection needs a token (tests/api/test_abuse.py: without one it is refused)
    database = ProtoReflectionDescriptorDatabase(with_token(local.channel, TOKENS["auditor"]))
    services = set(database.get_services())
    assert services >= {*SERVICE_NAMES, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"}
    pool = DescriptorPool(database)
    method = pool.FindServiceByName("pokdeng.v1.RoundService").methods_by_name["PlaceBet"]
    assert method.input_type.full_name == "pokdeng.v1.PlaceBetRequest"
    fields = ["request_id", "round_id", "seat", "player", "stake", "client_seed"]
    assert [f.name for f in method.input_type.fields] == fields
    subscribe = pool.FindServiceByName("pokdeng.v1.EventService").methods_by_name["SubscribeEvents"]
    assert subscribe.server_streaming


def test_bind_addresses() -> None:
    assert bind_address("0") == "127.0.0.1:0"
    assert bind_address(":50051") == "127.0.0.1:50051"
    assert bind_address("0.0.0.0:7") == "0.0.0.0:7"
    assert bind_address("[::1]:0") == "[::1]:0"
    with pytest.raises(ValueError):
        bind_address("localhost")


def test_development_mode_and_a_bare_port(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = make_app(sqlite_env(tmp_path))
    server, port = create_server("0", app)  # no tokens: development mode, loopback only
    try:
        token = server.tokens.development_token
        assert token and capsys.readouterr().err.count(token) == 1
        server.start()
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            from pokdeng_client.v1 import pokdeng_pb2_grpc as pb_grpc

            wallets = pb_grpc.WalletServiceStub(channel)
            request = pb.OpenWalletRequest(request_id="r", wallet_id="w")
            assert wallets.OpenWallet(request, metadata=(("authorization", f"Bearer {token}"),)).wallet.wallet_id == "w"
        with pytest.raises(OSError, match="cannot listen"):
            create_server(f"127.0.0.1:{port}", app, tokens=server.tokens)  # the port is taken
    finally:
        server.stop(0).wait(5)
        app.close()


def test_graceful_shutdown(tmp_path: Path, start_server: StartServer) -> None:
    """Health turns NOT_SERVING, a call in flight finishes, subscriptions end UNAVAILABLE, new calls are refused."""
    app = make_app(sqlite_env(tmp_path))
    entered, release = threading.Event(), threading.Event()

    def slow_deposit(request_id: str, *args: Any) -> Any:
        if request_id == "slow":
            entered.set()
            release.wait(5)
        return app.deposit(request_id, *args)

    served = start_server(Faulty(app, deposit=slow_deposit), max_workers=4)
    ops, auditor = served.api("operator"), served.api("auditor")
    open_wallets(ops, ["alice"])
    health: Any = health_pb2_grpc.HealthStub(served.channel)
    watch = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=20)
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    feed = auditor.method("EventService", "SubscribeEvents")(pb.SubscribeEventsRequest(), metadata=auditor.metadata)
    assert next(feed).caught_up
    in_flight = ops.method("WalletService", "Deposit").future(
        pb.DepositRequest(request_id="slow", wallet_id="alice", amount=5), metadata=ops.metadata
    )
    assert entered.wait(5)
    done = served.server.stop(10)
    assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
    watch.cancel()
    with pytest.raises(grpc.RpcError) as ended:
        next(feed)
    assert ended.value.code() == grpc.StatusCode.UNAVAILABLE and "resume after position" in (
        ended.value.details() or ""
    )
    refused = error_of(lambda: ops.wallet("alice"))
    assert refused.code() == grpc.StatusCode.UNAVAILABLE
    release.set()
    assert in_flight.result(timeout=10).wallet.balance == 1_000_005  # the call in flight finished
    assert done.wait(10)
    served.stopped = True
    assert app.get_wallet("alice").balance == 1_000_005
    app.close()


SERVE_GRACE = 5.0
SERVE_SCRIPT = textwrap.dedent(
    """
    import sys
    from pokdeng_service.application import PokdengApp
    from pokdeng_service.api.server import serve

    app = PokdengApp({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": sys.argv[1]})
    code = serve("127.0.0.1:0", app, tokens=sys.argv[2], grace=float(sys.argv[3]),
                 ready=lambda server, port: print(f"PORT {port}", flush=True))
    app.close()
    print("STOPPED", flush=True)
    sys.exit(code)
    """
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_gracefully_on_a_signal(tmp_path: Path, signum: signal.Signals) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [{"token_sha256": token_digest(TOKENS["operator"]), "role": "operator"}]}))
    tokens.chmod(0o600)  # (a secret file: its owner's alone)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE_SCRIPT, str(tmp_path / "db.sqlite"), str(tokens), str(SERVE_GRACE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), line + (process.stderr.read() if process.stderr else "")
        port = int(line.split()[1])
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            from pokdeng_client.v1 import pokdeng_pb2_grpc as pb_grpc

            metadata = (("authorization", f"Bearer {TOKENS['operator']}"),)
            opened = pb_grpc.WalletServiceStub(channel).OpenWallet(
                pb.OpenWalletRequest(request_id="r", wallet_id="w"), metadata=metadata, timeout=10
            )
            assert opened.wallet.wallet_id == "w"
        process.send_signal(signum)
        # nothing is in flight: it stops at once, well within its grace (the timeout only ends a hang)
        out, err = process.communicate(timeout=SERVE_GRACE * 12)
        assert process.returncode == 0, err
        assert "STOPPED" in out
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
