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
from pokdeng_service.api.listening import TlsFiles
from pokdeng_service.api.server import PokdengServer, create_server
from pokdeng_service.store.secret_files import SecretFileError

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
    ca_key: ec.EllipticCurvePrivateKey,
    ca: x509.Certificate,
    common: str,
    usage: x509.ObjectIdentifier,
    server: bool,
    valid: tuple[datetime.timedelta, datetime.timedelta] = (-datetime.timedelta(minutes=5), datetime.timedelta(days=1)),
) -> tuple[bytes, bytes]:
    """A certificate the CA signs and its key (PEM), valid from now + ``valid[0]`` to now + ``valid[1]``."""
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + valid[0])
        .not_valid_after(now + valid[1])
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
    (folder / "server.key").chmod(0o600)  # (a secret file: one its group or others may read is refused)
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


def test_a_tls_key_open_to_its_group_or_others_is_refused(tmp_path: Path) -> None:
    """The one rule of secret files (store/secret_files.py): the key must be its owner's alone."""
    ca_key, ca = _ca("modes CA")
    cert, key = _leaf(ca_key, ca, NAME, ExtendedKeyUsageOID.SERVER_AUTH, server=True)
    (tmp_path / "server.pem").write_bytes(cert)
    (tmp_path / "server.key").write_bytes(key)
    tls = TlsFiles(tmp_path / "server.pem", tmp_path / "server.key")
    app = make_app(sqlite_env(tmp_path))
    try:
        for mode in (0o644, 0o640, 0o604, 0o660, 0o740):
            (tmp_path / "server.key").chmod(mode)
            with pytest.raises(SecretFileError, match=r"chmod 600 .*server\.key") as refused:
                tls.check()
            assert f"TLS private key {tmp_path / 'server.key'} is open to its group or others (mode {mode:03o})" in (
                str(refused.value)
            )
            with pytest.raises(SecretFileError):
                create_server("127.0.0.1:0", app, tokens=token_store(), tls=tls)
    finally:
        app.close()
    (tmp_path / "server.key").chmod(0o400)
    assert tls.check() > datetime.datetime.now(datetime.UTC)


@pytest.mark.parametrize(
    ("valid", "refusal"),
    [
        ((-datetime.timedelta(days=30), -datetime.timedelta(days=1)), "expired on"),
        ((datetime.timedelta(days=1), datetime.timedelta(days=30)), "is not valid yet"),
    ],
)
def test_a_certificate_out_of_its_dates_is_refused_at_the_start(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    valid: tuple[datetime.timedelta, datetime.timedelta],
    refusal: str,
) -> None:
    ca_key, ca = _ca("dates CA")
    cert, key = _leaf(ca_key, ca, NAME, ExtendedKeyUsageOID.SERVER_AUTH, server=True, valid=valid)
    folder = tmp_path / "pki"
    folder.mkdir()
    (folder / "server.pem").write_bytes(cert)
    (folder / "server.key").write_bytes(key)
    (folder / "server.key").chmod(0o600)
    tls = TlsFiles(folder / "server.pem", folder / "server.key")
    with pytest.raises(ValueError, match=f"the TLS certificate {folder / 'server.pem'} {refusal}"):
        tls.check()
    # pokdeng serve refuses it before anything is made: exit 2, no store, no vault key, no lock
    from pokdeng_service.cli import EXIT_USAGE, main

    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.chdir(store)
    for name in ("POKDENG_VAULT_KEY", "POKDENG_VAULT_KEY_FILE", "POKDENG_DB", "POKDENG_POSTGRES_URL"):
        monkeypatch.delenv(name, raising=False)
    argv = ["serve", "--db", str(store / "s.sqlite"), "--port", "0", "--tls-cert", str(folder / "server.pem")]
    assert main([*argv, "--tls-key", str(folder / "server.key")]) == EXIT_USAGE
    assert refusal in capsys.readouterr().err
    assert list(store.iterdir()) == []


def test_the_days_left_of_the_certificate_are_a_metric(pki: Pki, serve_tls: object) -> None:
    from prometheus_client import REGISTRY

    serve_tls(TlsFiles(pki.server_cert, pki.server_key))  # type: ignore[operator]
    days = REGISTRY.get_sample_value("pokdeng_tls_certificate_expiry_days")
    assert days is not None and 0.9 < days <= 1.0  # (the pki's certificate ends a day after it was made)
