"""Keys and certificates of the authenticated-transport tests: a CA, the platform's server certificate for
127.0.0.1, pokdeng's client certificate, and the signing keys of both sides (Ed25519, or RSA), as files
(private keys mode 600: the secret-file rule)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pokdeng_service.wallet.signing import PrivateKey, PublicKey


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem_private(key: PrivateKey | ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def public_pem(key: PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def write_secret(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    os.chmod(path, 0o600)
    return path


def write_private(path: Path, key: PrivateKey) -> Path:
    """``key`` as a PEM file of mode 600, replaced atomically (a rotation: ``mv`` of a new file)."""
    temporary = path.with_suffix(".new")
    write_secret(temporary, _pem_private(key))
    os.replace(temporary, path)
    return path


def signing_key(kind: str = "ed25519") -> PrivateKey:
    return ed25519.Ed25519PrivateKey.generate() if kind == "ed25519" else rsa.generate_private_key(65537, 2048)


@dataclass
class Pki:
    folder: Path
    ca: Path  # the CA certificate (both sides trust it)
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path  # a CA that signed neither


EcKey = ec.EllipticCurvePrivateKey


def _certificate(subject: str, key: EcKey, issuer: x509.Name, issuer_key: EcKey, ca: bool,
                 usage: x509.ObjectIdentifier | None = None) -> x509.Certificate:  # fmt: skip
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if usage == ExtendedKeyUsageOID.SERVER_AUTH:
        names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_pki(folder: Path) -> Pki:
    folder.mkdir(parents=True, exist_ok=True)

    def pem(cert: x509.Certificate) -> bytes:
        return cert.public_bytes(serialization.Encoding.PEM)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("wallet test CA", ca_key, _name("wallet test CA"), ca_key, ca=True)
    other_key = ec.generate_private_key(ec.SECP256R1())
    other = _certificate("another CA", other_key, _name("another CA"), other_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _certificate("platform", server_key, ca.subject, ca_key, False, ExtendedKeyUsageOID.SERVER_AUTH)
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = _certificate("pokdeng", client_key, ca.subject, ca_key, False, ExtendedKeyUsageOID.CLIENT_AUTH)
    (folder / "ca.pem").write_bytes(pem(ca))
    (folder / "other-ca.pem").write_bytes(pem(other))
    (folder / "server.pem").write_bytes(pem(server))
    (folder / "client.pem").write_bytes(pem(client))
    return Pki(
        folder, folder / "ca.pem", folder / "server.pem", write_secret(folder / "server.key", _pem_private(server_key)),
        folder / "client.pem", write_secret(folder / "client.key", _pem_private(client_key)), folder / "other-ca.pem",
    )  # fmt: skip
