"""TLS and mutual TLS on the gRPC port, with a CA the test makes (``cryptography``)."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.server import PokdengServer, TlsFiles, create_server

from .client import Api, error_of
from .conftest import make_app, sqlite_env, token_store

NAME = "pokdeng.test"  # the server certificate's name (and 127.0.0.1)


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: bytes
    client_key: bytes
    stranger_cert: bytes  # signed by another CA
    stranger_key: bytes


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _ca(common: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(_name(common))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )  # digital signature, certificate and CRL signing
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(
    ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, common: str, usage: x509.ObjectIdentifier, server: bool
) -> tuple[bytes, bytes]:
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if server:
        names = [x509.DNSName(NAME), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ca_key, ca = _ca("pokdeng test CA")
    server_cert, server_key = _leaf(ca_key, ca, NAME, ExtendedKeyUsageOID.SERVER_AUTH, server=True)
    client_cert, client_key = _leaf(ca_key, ca, "platform", ExtendedKeyUsageOID.CLIENT_AUTH, server=False)
    other_key, other = _ca("another CA")
    stranger_cert, stranger_key = _leaf(other_key, other, "stranger", ExtendedKeyUsageOID.CLIENT_AUTH, server=False)
    (folder / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (folder / "server.pem").write_bytes(server_cert)
    (folder / "server.key").write_bytes(server_key)
    return Pki(
        folder / "ca.pem",
        folder / "server.pem",
        folder / "server.key",
        client_cert,
        client_key,
        stranger_cert,
        stranger_key,
    )


@pytest.fixture
def serve_tls(tmp_path: Path) -> Iterator[object]:
    running: list[tuple[PokdengServer, object]] = []

    def start(tls: TlsFiles) -> int:
        app = make_app(sqlite_env(tmp_path))
        server, port = create_server("127.0.0.1:0", app, tokens=token_store(), tls=tls)
        server.start()
        running.append((server, app))
        return port

    yield start
    for server, app in running:
        server.stop(0).wait(5)
        app.close()  # type: ignore[attr-defined]


def _secure(port: int, pki: Pki, cert: bytes | None = None, key: bytes | None = None) -> grpc.Channel:
    credentials = grpc.ssl_channel_credentials(pki.ca.read_bytes(), private_key=key, certificate_chain=cert)
    return grpc.secure_channel(f"127.0.0.1:{port}", credentials, options=(("grpc.ssl_target_name_override", NAME),))


def _open_wallet(channel: grpc.Channel, wallet: str) -> str:
    from .client import TOKENS

    ops = Api(channel, TOKENS["operator"], prefix=wallet)
    answer = ops.cmd("WalletService", "OpenWallet", pb.OpenWalletRequest(wallet_id=wallet))
    return str(answer.wallet.wallet_id)


def test_a_tls_client_works_and_a_plaintext_client_fails(pki: Pki, serve_tls: object) -> None:
    port = serve_tls(TlsFiles(pki.server_cert, pki.server_key))  # type: ignore[operator]
    with _secure(port, pki) as channel:
        assert _open_wallet(channel, "over-tls") == "over-tls"
    with grpc.insecure_channel(f"127.0.0.1:{port}") as plain:
        error = error_of(lambda: _open_wallet(plain, "in-clear"))
        assert error.code() == grpc.StatusCode.UNAVAILABLE
    untrusting = grpc.ssl_channel_credentials(pki.client_cert)  # trusts a certificate that is no CA of the server
    with grpc.secure_channel(
        f"127.0.0.1:{port}", untrusting, options=(("grpc.ssl_target_name_override", NAME),)
    ) as channel:
        assert error_of(lambda: _open_wallet(channel, "unverified")).code() == grpc.StatusCode.UNAVAILABLE


def test_mutual_tls_refuses_a_client_without_a_certificate_of_the_ca(pki: Pki, serve_tls: object) -> None:
    port = serve_tls(TlsFiles(pki.server_cert, pki.server_key, client_ca=pki.ca))  # type: ignore[operator]
    with _secure(port, pki, pki.client_cert, pki.client_key) as channel:
        assert _open_wallet(channel, "with-cert") == "with-cert"
    with _secure(port, pki) as channel:  # TLS, but no client certificate
        assert error_of(lambda: _open_wallet(channel, "no-cert")).code() == grpc.StatusCode.UNAVAILABLE
    with _secure(port, pki, pki.stranger_cert, pki.stranger_key) as channel:  # another CA's certificate
        assert error_of(lambda: _open_wallet(channel, "stranger")).code() == grpc.StatusCode.UNAVAILABLE
    with grpc.insecure_channel(f"127.0.0.1:{port}") as plain:
        assert error_of(lambda: _open_wallet(plain, "in-clear")).code() == grpc.StatusCode.UNAVAILABLE


def test_tls_settings_are_checked() -> None:
    assert TlsFiles.of(None, None) is None
    with pytest.raises(ValueError, match="both"):
        TlsFiles.of("cert.pem", None)
    with pytest.raises(ValueError, match="needs --tls-cert"):
        TlsFiles.of(None, None, "ca.pem")
    with pytest.raises(OSError, match=r"cannot read the TLS (key|certificate)"):
        TlsFiles(Path("/nonexistent/cert.pem"), Path("/nonexistent/key.pem")).credentials()
