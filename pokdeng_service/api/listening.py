"""Where the gRPC server listens: its address (``bind_address``), the check that a port can be listened on
before anything is made (``check_port``, ``PortInUse``), and TLS on the port (``TlsFiles``)."""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import grpc
from cryptography import x509

from pokdeng_service.store.secret_files import read_secret

DEFAULT_HOST = "127.0.0.1"


def bind_address(address: str) -> str:
    """``host:port`` to bind: a bare port (``"50051"``, ``":50051"``) binds the loopback interface only."""
    text = address.strip()
    if text.isdigit():
        return f"{DEFAULT_HOST}:{text}"
    if text.startswith(":"):
        return f"{DEFAULT_HOST}{text}"
    if ":" not in text:
        raise ValueError(f"not an address: {address!r} (expected host:port)")
    return text


@dataclass(frozen=True)
class TlsFiles:
    """TLS on the gRPC port: the server's certificate chain and key (PEM); with ``client_ca``, mutual TLS:
    a client must present a certificate that CA signed, else its handshake is refused.

    The key is a secret file (``store.secret_files``): one its group or others may access is refused. The
    chain's first certificate (the server's) must be valid now: one that has expired or is not valid yet
    is refused at the start (``check``), rather than served to clients that would each refuse it."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    @classmethod
    def of(cls, cert: str | None, key: str | None, client_ca: str | None = None) -> TlsFiles | None:
        """From the ``--tls-*`` settings: None without a certificate; a certificate needs its key."""
        if not cert and not key:
            if client_ca:
                raise ValueError("--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS first)")
            return None
        if not (cert and key):
            raise ValueError("TLS needs both --tls-cert and --tls-key")
        return cls(Path(cert), Path(key), Path(client_ca) if client_ca else None)

    def _read(self) -> tuple[bytes, bytes, bytes | None]:
        def read(path: Path, what: str) -> bytes:
            try:
                return read_secret(path, "TLS private key") if what == "key" else path.read_bytes()
            except OSError as error:
                raise OSError(f"cannot read the TLS {what} {path}: {error.strerror or error}") from None

        ca = read(self.client_ca, "client CA") if self.client_ca is not None else None
        return read(self.key, "key"), read(self.cert, "certificate"), ca

    def check(self, now: datetime | None = None) -> datetime:
        """Read the files (the key under the rule of secret files) and check that the server's certificate is
        valid at ``now`` (default: now); its end of validity (UTC). ``ValueError`` naming the file if not."""
        _key, chain, _ca = self._read()
        try:
            certificate = x509.load_pem_x509_certificates(chain)[0]
        except ValueError as error:
            raise ValueError(f"the TLS certificate {self.cert} is not a PEM certificate: {error}") from None
        now = now or datetime.now(UTC)
        before, after = certificate.not_valid_before_utc, certificate.not_valid_after_utc
        if now < before:
            raise ValueError(
                f"the TLS certificate {self.cert} is not valid yet: from {before:%Y-%m-%d %H:%M:%S} UTC "
                f"(now {now:%Y-%m-%d %H:%M:%S} UTC; check the clock, or the certificate)"
            )
        if now > after:
            raise ValueError(
                f"the TLS certificate {self.cert} expired on {after:%Y-%m-%d %H:%M:%S} UTC: renew it "
                "(clients refuse an expired certificate)"
            )
        return after

    def credentials(self) -> grpc.ServerCredentials:
        key, cert, ca = self._read()
        chain = [(key, cert)]
        if ca is None:
            return grpc.ssl_server_credentials(chain)
        return grpc.ssl_server_credentials(chain, root_certificates=ca, require_client_auth=True)


class PortInUse(ValueError):
    """``pokdeng serve``'s port (or its metrics port) cannot be listened on: checked before anything is made."""


def check_port(host: str, port: int, what: str = "the gRPC port") -> None:
    """Refuse (``PortInUse``) a ``host:port`` that cannot be listened on now: another process listens there,
    the address is not this host's, the port is privileged. Port 0 (any free port) always can. Bound as
    grpc binds (``SO_REUSEADDR``: a port whose last connections linger in TIME_WAIT is free), and let go
    at once: ``pokdeng serve`` checks its ports before it writes any file (a lock, a vault key)."""
    if port == 0:
        return
    name = host.strip("[]")
    try:
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as error:
        raise PortInUse(f"cannot listen on {host}:{port} ({what}): {error.strerror or error}") from None
    for family, kind, proto, _name, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    raise PortInUse(
                        f"port in use: {host}:{port} ({what}) is taken by another process (another server?): "
                        "stop it, or choose another port"
                    ) from None
                raise PortInUse(f"cannot listen on {host}:{port} ({what}): {error.strerror or error}") from None


__all__ = ["DEFAULT_HOST", "PortInUse", "TlsFiles", "bind_address", "check_port"]
