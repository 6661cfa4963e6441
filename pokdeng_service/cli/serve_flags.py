"""The flags of ``pokdeng serve`` (``FLAGS``, ``add_serve_flags``): argparse only, so building the parser
(and ``--help``) loads no pydantic. ``cli.settings.ServeSettings`` reads them, over the environment
(``POKDENG_<NAME>``), over the defaults; it re-exports both. The limits' defaults in the help are those of
``pokdeng_service.server_limits`` (constants only), as the settings' are.
"""

from __future__ import annotations

import argparse
from typing import Any

from pokdeng_service import server_limits as limits

FLAGS: dict[str, dict[str, Any]] = {
    "--host": {"help": "interface to listen on (default 127.0.0.1; $POKDENG_HOST)"},
    "--port": {"type": int, "help": "gRPC port (default 50051; $POKDENG_PORT)"},
    "--tokens": {"help": "token file (JSON or TOML); default: development mode with a printed operator token"},
    "--workers": {"type": int, "help": f"threads running the calls' blocking work (default {limits.WORKERS})"},
    "--tls-cert": {"help": "server certificate chain (PEM): TLS on the gRPC port"},
    "--tls-key": {"help": "the certificate's private key (PEM)"},
    "--tls-client-ca": {"help": "CA certificate(s) of the clients (PEM): mutual TLS"},
    "--metrics-port": {"type": int, "help": "serve Prometheus metrics on this port (default: off)"},
    "--metrics-host": {"help": "interface of the metrics endpoint (default 127.0.0.1)"},
    "--metrics-threads": {
        "type": int,
        "help": f"metrics connections served at once; more are refused (default {limits.METRICS_THREADS})",
    },
    "--metrics-timeout": {
        "type": float,
        "help": f"seconds a metrics connection may stay open (default {limits.METRICS_TIMEOUT:g})",
    },
    "--shutdown-grace": {
        "type": float,
        "help": f"seconds calls in flight get on SIGTERM (default {limits.SHUTDOWN_GRACE:g})",
    },
    "--max-concurrent-rpcs": {"type": int, "help": f"unary calls in flight (default {limits.CALLS_A_WORKER} a worker)"},
    "--max-calls-per-caller": {"type": int, "help": "unary calls in flight for one token (default half)"},
    "--max-subscriptions": {"type": int, "help": "event streams at once (default half the workers)"},
    "--max-health-watches": {"type": int, "help": f"health Watch streams at once (default {limits.HEALTH_WATCHES})"},
    "--max-watches": {
        "type": int,
        "help": f"watch streams at once (default the workers, at least {limits.MIN_WATCHES})",
    },
    "--max-reflection-streams": {
        "type": int,
        "help": f"reflection streams at once (default {limits.REFLECTION_STREAMS})",
    },
    "--costly-workers": {
        "type": int,
        "help": f"audits (replay, verify, export, proofs) running at once (default {limits.COSTLY_WORKERS})",
    },
    "--stream-idle": {
        "type": float,
        "help": "seconds a stream may wait on its client, or have nothing but heartbeats to send"
        f" (default {limits.STREAM_IDLE:g})",
    },
    "--rate-reads": {
        "type": float,
        "help": f"unary reads a second, per caller (default {limits.RATE_READS:g}; 0: no limit)",
    },
    "--rate-reads-burst": {
        "type": int,
        "help": f"unary reads a caller may send at once (default {limits.RATE_READS_BURST})",
    },
    "--rate-commands": {
        "type": float,
        "help": f"commands a second, per caller (default {limits.RATE_COMMANDS:g}; 0: no limit)",
    },
    "--rate-commands-burst": {
        "type": int,
        "help": f"commands a caller may send at once (default {limits.RATE_COMMANDS_BURST})",
    },
    "--rate-streams": {
        "type": float,
        "help": f"streams opened a second, per caller (default {limits.RATE_STREAMS:g}; 0: no limit)",
    },
    "--rate-streams-burst": {
        "type": int,
        "help": f"streams a caller may open at once (default {limits.RATE_STREAMS_BURST})",
    },
    "--connection-idle": {
        "type": float,
        "help": f"seconds before an idle connection is closed (default {limits.CONNECTION_IDLE:g})",
    },
    "--probe-interval": {"type": float, "help": f"seconds between store probes (default {limits.PROBE_INTERVAL:g})"},
    "--log-format": {"choices": ["json", "text"], "help": "log lines as JSON objects (default) or text"},
    "--log-level": {"choices": ["DEBUG", "INFO", "WARNING", "ERROR"], "help": "the log's threshold (default INFO)"},
    "--log-field-chars": {"type": int, "help": "characters of a logged field before it is cut (default 128)"},
    "--log-buffer-lines": {"type": int, "help": "log lines waiting to be written; more are dropped (default 10000)"},
    "--log-buffer-bytes": {"type": int, "help": "bytes of log lines waiting; more are dropped (default 4 MiB)"},
    "--log-refusals-per-second": {
        "type": float,
        "help": "log lines a second of calls refused without a valid token, per peer host"
        f" (default {limits.LOG_REFUSALS_PER_SECOND:g}; 0: none)",
    },
    "--grpc-core-log": {
        "choices": ["capture", "raw"],
        "help": "the gRPC core's own lines as records of the log (capture, default) or as it writes them (raw)",
    },
    "--read-models": {
        "choices": ["process", "thread", "off"],
        "help": "project the read models in a child process (default), a thread of the server, or not at all",
    },
    "--wallet": {
        "choices": ["internal", "remote", "hub88"],
        "help": "the store's wallets (default), the platform's (pokdeng's protocol), or Hub88's wallet API",
    },
    "--wallet-url": {
        "help": "the platform's wallet service: host:port or grpcs://host:port (gRPC), http(s)://host:port (JSON)"
    },
    "--wallet-timeout": {"type": float, "help": "seconds one call to the platform's wallet may take (default 2)"},
    "--wallet-attempts": {"type": int, "help": "calls of one wallet transaction within a command (default 3)"},
    "--wallet-tls-ca": {"help": "CA file (PEM) that verifies the platform's certificate (grpcs://, https://)"},
    "--wallet-tls-cert": {"help": "pokdeng's client certificate (PEM) to the platform: mutual TLS"},
    "--wallet-tls-key": {"help": "the client certificate's private key (a secret file: chmod 600)"},
    "--wallet-sign-key": {"help": "Ed25519 or RSA private key (PEM, chmod 600) signing every wallet request"},
    "--wallet-platform-keys": {"help": "the platform's public keys (PEM): its signed answers verified"},
    "--wallet-signature-window": {"type": float, "help": "seconds a signed answer's time may be off (default 60)"},
    "--wallet-protocol": {"type": int, "choices": [1, 2], "help": "pokdeng.wallet.v1 (default) or v2 (docs/wallet.md)"},
    "--wallet-game-code": {"help": "the game code protocol v2 sends in every call (default pokdeng)"},
    "--wallet-provider-id": {"help": "the provider id protocol v2 sends in every call (default pokdeng)"},
    "--wallet-hub88-key": {"help": "--wallet hub88: pokdeng's RSA private key (PEM, chmod 600) signing every request"},
    "--wallet-hub88-public-keys": {"help": "--wallet hub88: Hub88's RSA public keys (PEM): its answers verified"},
    "--wallet-allow-unfinished": {
        "action": "store_const",
        "const": True,
        "help": "start on the internal wallets although open rounds hold debits on the platform's wallet, or its "
        "transactions are pending (those rounds stay refused until served with --wallet remote; docs/wallet.md)",
    },
}


def add_serve_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of ``pokdeng serve`` (every one defaults to None: the settings fill in the rest)."""
    for flag, options in FLAGS.items():
        parser.add_argument(flag, default=None, **options)
    parser.add_argument(
        "--no-access-log", dest="access_log", action="store_const", const=False, default=None,
        help="no log line per call ($POKDENG_ACCESS_LOG=false)",
    )  # fmt: skip
    parser.set_defaults(partitions=None)  # the store options' default comes from the settings


__all__ = ["FLAGS", "add_serve_flags"]
