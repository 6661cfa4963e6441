"""``pokdeng serve``'s settings: every flag, also from the environment (``POKDENG_<NAME>``), in one object.

A flag given on the command line wins over the environment, which wins over the default:
``POKDENG_PORT=50052 pokdeng serve`` and ``pokdeng serve --port 50052`` are the same. The table of
every setting is in docs/operations.md. Secrets are not settings: the vault key stays in
``POKDENG_VAULT_KEY`` (or its key file), tokens in the token file (hashes only). The flags themselves
(``FLAGS``, ``add_serve_flags``) are in ``cli.serve_flags``, without pydantic: the parser is built from them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from pokdeng_service import server_limits as limits
from pokdeng_service.api.rates import Rate
from pokdeng_service.application.config import ConfigError, StoreConfig
from pokdeng_service.cli.serve_flags import FLAGS, add_serve_flags


class ServeSettings(BaseSettings):
    """What ``pokdeng serve`` runs with (docs/operations.md, "Settings")."""

    model_config = SettingsConfigDict(env_prefix="POKDENG_", extra="ignore", case_sensitive=False)

    # the store
    db: str | None = Field(None, description="SQLite file (default pokdeng.sqlite)")
    postgres_url: str | None = Field(None, description="PostgreSQL URL postgresql://user:pw@host:port/db")
    partitions: int = Field(1, ge=1, le=64, description="event stores to spread tables over")
    partition_urls: str | None = Field(None, description="a PostgreSQL URL per partition: K=URL items or JSON")
    vault_key_file: str | None = Field(None, description="the vault key file (SQLite default: <db>.vault-key)")
    # the gRPC port
    host: str = Field("127.0.0.1", description="interface to listen on (0.0.0.0: every one)")
    port: int = Field(50051, ge=0, le=65535, description="gRPC port")
    tokens: str | None = Field(None, description="token file (JSON/TOML); none: development mode")
    tls_cert: str | None = Field(None, description="server certificate chain (PEM): TLS on the gRPC port")
    tls_key: str | None = Field(None, description="the certificate's private key (PEM)")
    tls_client_ca: str | None = Field(None, description="CA of client certificates (PEM): mutual TLS")
    # limits
    workers: int = Field(limits.WORKERS, ge=2, le=1024, description="threads running the calls' blocking work")
    max_concurrent_rpcs: int | None = Field(None, ge=1, description="unary calls in flight (default 8 a worker)")
    max_calls_per_caller: int | None = Field(None, ge=1, description="of those, one token's (default half)")
    max_subscriptions: int | None = Field(None, ge=1, description="event streams (default half the workers)")
    max_health_watches: int = Field(limits.HEALTH_WATCHES, ge=0, description="health Watch streams")
    max_watches: int | None = Field(None, ge=1, description="WatchTable and WatchRound streams (default the workers)")
    max_reflection_streams: int = Field(limits.REFLECTION_STREAMS, ge=0, description="reflection streams")
    costly_workers: int = Field(
        limits.COSTLY_WORKERS, ge=1, le=1024, description="audits (replay, verify, export, proofs) running at once"
    )
    stream_idle: float = Field(
        limits.STREAM_IDLE, gt=0, description="seconds a stream may wait on its client, or have only heartbeats to send"
    )
    # each caller's rates (api/rates.py; the operator has none): calls a second (0: no limit), and at once
    rate_reads: float = Field(limits.RATE_READS, ge=0, description="unary reads a second, per caller")
    rate_reads_burst: int = Field(limits.RATE_READS_BURST, ge=1, description="unary reads a caller may send at once")
    rate_commands: float = Field(limits.RATE_COMMANDS, ge=0, description="commands a second, per caller")
    rate_commands_burst: int = Field(limits.RATE_COMMANDS_BURST, ge=1, description="commands a caller may send at once")
    rate_streams: float = Field(limits.RATE_STREAMS, ge=0, description="streams opened a second, per caller")
    rate_streams_burst: int = Field(limits.RATE_STREAMS_BURST, ge=1, description="streams a caller may open at once")
    connection_idle: float = Field(
        limits.CONNECTION_IDLE, gt=0, description="seconds before a connection with no call is closed"
    )
    probe_interval: float = Field(limits.PROBE_INTERVAL, gt=0, le=60, description="seconds between store probes")
    # operations
    metrics_port: int | None = Field(None, ge=0, le=65535, description="Prometheus endpoint port (none: off)")
    metrics_host: str = Field("127.0.0.1", description="interface of the metrics endpoint")
    metrics_threads: int = Field(
        limits.METRICS_THREADS, ge=1, le=64, description="metrics connections served at once (more: 503)"
    )
    metrics_timeout: float = Field(
        limits.METRICS_TIMEOUT, gt=0, le=300, description="seconds a metrics connection may stay open"
    )
    shutdown_grace: float = Field(limits.SHUTDOWN_GRACE, ge=0, description="seconds calls in flight get on SIGTERM")
    log_format: Literal["json", "text"] = Field("json", description="log lines: JSON objects or text")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="the log's threshold")
    access_log: bool = Field(True, description="one log line per call")
    log_field_chars: int = Field(128, ge=16, le=65536, description="characters of a logged field before it is cut")
    log_buffer_lines: int = Field(10_000, ge=100, description="log lines waiting for standard error (more: dropped)")
    log_buffer_bytes: int = Field(4 * 1024 * 1024, ge=65536, description="bytes of log lines waiting (more: dropped)")
    log_refusals_per_second: float = Field(
        limits.LOG_REFUSALS_PER_SECOND,
        ge=0,
        description="log lines a second of calls refused without a valid token, per peer host",
    )
    grpc_core_log: Literal["capture", "raw"] = Field(
        "capture", description="the gRPC core's lines in the log's stream (capture) or as it writes them (raw)"
    )
    read_models: Literal["process", "thread", "off"] = Field(
        "process", description="where the read models follow the log: a child process, a thread, or nowhere"
    )
    # the wallets (docs/wallet.md)
    wallet: Literal["internal", "remote", "hub88"] = Field(
        "internal", description="the store's wallets, the platform's, or Hub88's wallet API"
    )
    wallet_url: str | None = Field(None, description="the platform's wallet: host:port (gRPC) or http://... (JSON)")
    wallet_timeout: float = Field(2.0, gt=0, le=60, description="seconds one call to the platform's wallet may take")
    wallet_attempts: int = Field(3, ge=1, le=20, description="calls of one transaction within a command")
    wallet_tls_ca: str | None = Field(None, description="CA file verifying the platform's certificate (grpcs, https)")
    wallet_tls_cert: str | None = Field(None, description="pokdeng's client certificate to the platform (mutual TLS)")
    wallet_tls_key: str | None = Field(None, description="its private key (a secret file: mode 600)")
    wallet_sign_key: str | None = Field(None, description="the key file signing every request (Ed25519 or RSA PEM)")
    wallet_platform_keys: str | None = Field(None, description="the platform's public keys: its answers verified")
    wallet_signature_window: float = Field(60.0, ge=1, le=3600, description="seconds a signature's time may be off")
    wallet_protocol: int = Field(1, ge=1, le=2, description="the wallet protocol: pokdeng.wallet.v1 or v2")
    wallet_game_code: str = Field("pokdeng", min_length=1, description="the game code of protocol v2's calls")
    wallet_provider_id: str = Field("pokdeng", min_length=1, description="the provider id of protocol v2's calls")
    wallet_hub88_key: str | None = Field(None, description="--wallet hub88: pokdeng's RSA key (a secret file)")
    wallet_hub88_public_keys: str | None = Field(None, description="--wallet hub88: Hub88's public keys (PEM)")
    wallet_allow_unfinished: bool = Field(
        False, description="start on the internal wallets although rounds hold the platform's money (docs/wallet.md)"
    )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ServeSettings:
        """The flags given (not None) over the environment over the defaults."""
        given = {name: value for name, value in vars(args).items() if name in cls.model_fields and value is not None}
        if getattr(args, "partition_url", None):  # --partition-url K=URL, repeated: the map, over the environment's
            given["partition_urls"] = "\n".join(args.partition_url)
        try:
            return cls(**given)
        except ValidationError as error:
            problems = "; ".join(
                f"{'/'.join(str(p) for p in e['loc'])} (POKDENG_{str(e['loc'][0]).upper()}): {e['msg']}"
                for e in error.errors()
            )
            raise ConfigError(f"bad settings: {problems}") from None

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"{host}:{self.port}"

    def store_config(self) -> StoreConfig:
        return StoreConfig.from_args(
            db=self.db,
            postgres_url=self.postgres_url,
            partitions=self.partitions,
            vault_key_file=self.vault_key_file,
            partition_urls=self.partition_urls,
        )

    def check_ports(self) -> None:
        """The gRPC port and the metrics port can be listened on (``api.listening.check_port``: ``PortInUse``, a
        ``ValueError``, exit 2): checked before any file is written (the store's lock, its vault key)."""
        from pokdeng_service.api.listening import check_port

        check_port(self.host, self.port, "the gRPC port, --port")
        if self.metrics_port is not None:
            check_port(self.metrics_host, self.metrics_port, "the metrics port, --metrics-port")

    def wallet_config(self) -> Any:
        """The deployment's wallets (``wallet.config.WalletConfig``)."""
        from pokdeng_service.wallet.config import WalletConfig

        return WalletConfig(
            self.wallet, self.wallet_url or "", self.wallet_timeout, self.wallet_attempts,
            tls_ca=self.wallet_tls_ca or "", tls_cert=self.wallet_tls_cert or "", tls_key=self.wallet_tls_key or "",
            sign_key=self.wallet_sign_key or "", platform_keys=self.wallet_platform_keys or "",
            signature_window=self.wallet_signature_window, protocol=self.wallet_protocol,
            game_code=self.wallet_game_code, provider_id=self.wallet_provider_id,
            hub88_key=self.wallet_hub88_key or "", hub88_public_keys=self.wallet_hub88_public_keys or "",
        )  # fmt: skip

    def rates(self) -> dict[str, Rate]:
        """Each caller's rates by class of methods (``api.rates.Rate``)."""
        return {
            "reads": Rate(self.rate_reads, self.rate_reads_burst),
            "commands": Rate(self.rate_commands, self.rate_commands_burst),
            "streams": Rate(self.rate_streams, self.rate_streams_burst),
        }

    def server_options(self) -> dict[str, Any]:
        """``api.server.create_server``'s keyword arguments."""
        from pokdeng_service.api.auth import TokenStore
        from pokdeng_service.api.listening import TlsFiles

        tls = TlsFiles.of(self.tls_cert, self.tls_key, self.tls_client_ca)
        if tls is not None:
            tls.check()  # (the key's mode, the certificate's dates: refused before any store is made)
        return {
            # (read now: a token file that is missing or wrong stops the start before any store is made)
            "tokens": TokenStore.from_file(Path(self.tokens)) if self.tokens else None,
            "max_workers": self.workers,
            "max_concurrent_rpcs": self.max_concurrent_rpcs,
            "max_calls_per_caller": self.max_calls_per_caller,
            "max_subscriptions": self.max_subscriptions,
            "costly_workers": self.costly_workers,
            "max_streams": {
                "health": self.max_health_watches,
                "reflection": self.max_reflection_streams,
                **({"watch": self.max_watches} if self.max_watches else {}),
            },
            "stream_idle": self.stream_idle,
            "rates": self.rates(),
            "connection_idle": self.connection_idle,
            "tls": tls,
            "metrics_port": self.metrics_port,
            "metrics_host": self.metrics_host,
            "metrics_threads": self.metrics_threads,
            "metrics_timeout": self.metrics_timeout,
            "access_log": self.access_log,
            "log_refusals_per_second": self.log_refusals_per_second,
            "probe_interval": self.probe_interval,
        }


__all__ = ["FLAGS", "ServeSettings", "add_serve_flags"]
