"""``pokdeng serve``'s settings: every flag also from ``POKDENG_<NAME>``, one settings object, the shutdown grace."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_client.v1 import pokdeng_pb2_grpc as pb_grpc
from pokdeng_service.application.config import ConfigError
from pokdeng_service.auth import token_digest
from pokdeng_service.cli.main import build_parser
from pokdeng_service.cli.settings import FLAGS, ServeSettings
from pokdeng_testkit.keys import VAULT_KEY
from pokdeng_testkit.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "settings-operator-token-0123456789"


def _settings(argv: list[str]) -> ServeSettings:
    return ServeSettings.from_args(build_parser().parse_args(["serve", *argv]))


def test_a_flag_wins_over_the_environment_which_wins_over_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("POKDENG_")]:
        monkeypatch.delenv(name)
    defaults = _settings([])
    assert (defaults.port, defaults.host, defaults.shutdown_grace) == (50051, "127.0.0.1", 10)
    assert defaults.metrics_port is None and defaults.tokens is None
    assert (defaults.log_format, defaults.access_log, defaults.partitions, defaults.workers) == ("json", True, 1, 16)
    monkeypatch.setenv("POKDENG_PORT", "50999")
    monkeypatch.setenv("POKDENG_SHUTDOWN_GRACE", "2.5")
    monkeypatch.setenv("POKDENG_ACCESS_LOG", "false")
    monkeypatch.setenv("POKDENG_PARTITIONS", "3")
    monkeypatch.setenv("POKDENG_TLS_CLIENT_CA", "/etc/pokdeng/clients.pem")
    from_env = _settings([])
    assert (from_env.port, from_env.shutdown_grace, from_env.access_log, from_env.partitions) == (50999, 2.5, False, 3)
    assert from_env.tls_client_ca == "/etc/pokdeng/clients.pem"
    flagged = _settings(["--port", "50111", "--shutdown-grace", "0", "--partitions", "2", "--metrics-port", "9464"])
    assert (flagged.port, flagged.shutdown_grace, flagged.partitions, flagged.metrics_port) == (50111, 0, 2, 9464)
    monkeypatch.setenv("POKDENG_PORT", "not-a-port")
    with pytest.raises(ConfigError, match="POKDENG_PORT"):
        _settings([])


def test_every_flag_has_its_setting() -> None:
    for flag in FLAGS:
        assert flag[2:].replace("-", "_") in ServeSettings.model_fields, flag
    assert "access_log" in ServeSettings.model_fields and "db" in ServeSettings.model_fields


def _ready(process: subprocess.Popen[str], health: Any) -> Any:
    """The server's first health answer; a server that exited instead fails with what it said."""
    deadline = time.monotonic() + 60  # (a loaded machine starts a Python server slowly)
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}: {process.communicate()[1][-2000:]}")
        try:
            return health.Check(health_pb2.HealthCheckRequest(), wait_for_ready=True, timeout=2)
        except grpc.RpcError:
            if time.monotonic() > deadline:
                raise


def _statuses(watch: Any) -> Iterator[int]:
    """The statuses a health watch still sends, until the server ends it (the stream's end, or its error)."""
    try:
        for answer in watch:
            yield int(answer.status)
    except grpc.RpcError:
        return


def _stamp(line: dict[str, Any]) -> float:
    """A JSON log line's time (``ts``: ``2026-01-02T03:04:05.678Z``) in seconds."""
    return dt.datetime.strptime(line["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC).timestamp()


def test_serve_configured_from_the_environment_alone(tmp_path: Path) -> None:
    """POKDENG_* only: the port, tokens, metrics, JSON logs and a short shutdown grace (a health watch
    held open is cut off after it, not after the default 10 s)."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [{"token_sha256": token_digest(TOKEN), "role": "operator"}]}))
    tokens.chmod(0o600)  # (a secret file: its owner's alone)
    port, metrics = free_port(), free_port()  # (two ports, never the same one)
    env = {k: v for k, v in os.environ.items() if not k.startswith("POKDENG_")}
    env.update(
        PYTHONPATH=str(ROOT),
        POKDENG_DB=str(tmp_path / "env.sqlite"),
        POKDENG_VAULT_KEY=VAULT_KEY,
        POKDENG_PORT=str(port),
        POKDENG_TOKENS=str(tokens),
        POKDENG_METRICS_PORT=str(metrics),
        POKDENG_SHUTDOWN_GRACE="0.5",
        POKDENG_LOG_FORMAT="json",
        POKDENG_WORKERS="4",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "pokdeng_service.cli", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            health: Any = health_pb2_grpc.HealthStub(channel)  # (its stubs name no methods)
            answer = _ready(process, health)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
            metadata = (("authorization", f"Bearer {TOKEN}"),)
            opened = pb_grpc.WalletServiceStub(channel).OpenWallet(
                pb.OpenWalletRequest(request_id="env-1", wallet_id="env"), metadata=metadata, timeout=10
            )
            assert opened.wallet.wallet_id == "env"
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=5) as scraped:
                text = scraped.read().decode()
            assert 'pokdeng_rpcs_total{code="OK",method="pokdeng.v1.WalletService/OpenWallet"} 1.0' in text
            watch = health.Watch(health_pb2.HealthCheckRequest(), timeout=60)  # held open through the stop
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=60)
            held = list(_statuses(watch))  # what the watch got before the stop ended it
        assert process.returncode == 0, err
        assert f"127.0.0.1:{port}" in out
        lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
        # the grace of 0.5 s from the environment, not the default 10 s: what serve was given, and its stop
        # (from the signal to "stopped", by the server's own log) ended before the default grace could elapse
        default_grace = ServeSettings.model_fields["shutdown_grace"].default
        assert default_grace == 10 and held in ([], [health_pb2.HealthCheckResponse.NOT_SERVING]), held
        (signalled,) = [line for line in lines if line.get("msg", "").startswith("received SIGTERM")]
        assert signalled["msg"].endswith("(grace 0.5s)"), signalled
        (stopped,) = [line for line in lines if line.get("msg") == "pokdeng gRPC stopped"]
        assert _stamp(stopped) - _stamp(signalled) < default_grace, (signalled, stopped)
        calls = [line for line in lines if line.get("logger") == "pokdeng.calls"]
        assert any(c["method"] == "pokdeng.v1.WalletService/OpenWallet" and c["request_id"] == "env-1" for c in calls)
        assert all(c["level"] in ("INFO", "WARNING", "DEBUG") for c in calls)
        assert TOKEN not in err and TOKEN not in out
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_the_settings_table_of_the_operations_guide_names_every_setting() -> None:
    guide = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    for name in ServeSettings.model_fields:
        assert f"`POKDENG_{name.upper()}`" in guide, name
    for flag in FLAGS:
        assert f"`{flag}`" in guide, flag
