"""One rule for secret files (``store/secret_files.py``): the vault key, the signing keys, the TLS private key
and the token file are refused when their group or others may access them (``mode & 0o077``), with a
message that names the file and says ``chmod 600``; ``pokdeng serve`` exits 2."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pokdeng_service.auth import token_digest
from pokdeng_service.cli import EXIT_USAGE, main
from pokdeng_service.store.secret_files import SecretFileError, read_secret
from pokdeng_service.store.signing import KeyRing
from pokdeng_testkit.keys import VAULT_KEY

OPEN = (0o644, 0o640, 0o604, 0o660, 0o606, 0o610, 0o601)  # any bit of the group's or others'
PRIVATE = (0o600, 0o400)
STORE_ENV = ("POKDENG_VAULT_KEY", "POKDENG_VAULT_KEY_FILE", "POKDENG_DB", "POKDENG_POSTGRES_URL")


@pytest.fixture(autouse=True)
def _no_store_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*STORE_ENV, "POKDENG_SIGNING_KEY", "POKDENG_SIGNING_KEY_FILE", "POKDENG_TOKENS"):
        monkeypatch.delenv(name, raising=False)


def test_a_secret_file_is_read_only_if_its_owner_alone_may_access_it(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"s3cret\n")
    for mode in PRIVATE:
        secret.chmod(mode)
        assert read_secret(secret, "test secret") == b"s3cret\n"
    for mode in OPEN:
        secret.chmod(mode)
        with pytest.raises(SecretFileError) as refused:
            read_secret(secret, "test secret")
        assert str(refused.value) == (
            f"test secret {secret} is open to its group or others (mode {mode:03o}): "
            f"restrict it to its owner with `chmod 600 {secret}`"
        )
    # a link is followed: the mode that counts is its target's (a secret volume's files are links)
    link = tmp_path / "link"
    link.symlink_to(secret)
    with pytest.raises(SecretFileError, match=f"chmod 600 {link}"):
        read_secret(link, "test secret")
    secret.chmod(0o600)
    assert read_secret(link, "test secret") == b"s3cret\n"
    with pytest.raises(FileNotFoundError):
        read_secret(tmp_path / "missing", "test secret")


def _certificate(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pokdeng.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    (folder / "server.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    (folder / "server.key").write_bytes(pem)
    return folder / "server.pem", folder / "server.key"


@pytest.mark.parametrize("secret", ["vault key file", "signing key file", "token file", "TLS private key"])
def test_serve_refuses_each_secret_file_open_to_its_group_or_others(
    secret: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store, secrets = tmp_path / "store", tmp_path / "secrets"
    store.mkdir()
    secrets.mkdir()
    monkeypatch.chdir(store)
    db = store / "s.sqlite"
    argv = ["serve", "--db", str(db), "--port", "0"]
    if secret == "vault key file":
        file = secrets / "vault.key"
        file.write_text(VAULT_KEY + "\n")
        argv += ["--vault-key-file", str(file)]
    else:
        monkeypatch.setenv("POKDENG_VAULT_KEY", VAULT_KEY)
    if secret == "signing key file":
        file = secrets / "signing-keys"
        ring = KeyRing()
        ring.rotate()
        ring.save(file, new=True)
        monkeypatch.setenv("POKDENG_SIGNING_KEY_FILE", str(file))
    if secret == "token file":
        file = secrets / "tokens.json"
        file.write_text(json.dumps({"tokens": [{"token_sha256": token_digest("t" * 32), "role": "operator"}]}))
        argv += ["--tokens", str(file)]
    if secret == "TLS private key":
        cert, file = _certificate(secrets)
        argv += ["--tls-cert", str(cert), "--tls-key", str(file)]
    for mode in (0o644, 0o640):
        file.chmod(mode)
        assert main(argv) == EXIT_USAGE
        err = capsys.readouterr().err
        assert f"{secret} {file} is open to its group or others (mode {mode:03o})" in err, err
        assert f"chmod 600 {file}" in err
    assert not db.exists()  # (refused before the store was made)
    if secret == "signing key file":  # and the key tools follow the same rule
        assert main(["keys", "show", "--key-file", str(file)]) == EXIT_USAGE
        assert f"chmod 600 {file}" in capsys.readouterr().err
        file.chmod(0o600)
        assert main(["keys", "show", "--key-file", str(file)]) == 0


def test_the_secret_files_made_by_pokdeng_are_private(tmp_path: Path) -> None:
    """What pokdeng writes itself passes its own rule, whatever the umask."""
    old = os.umask(0)
    try:
        assert main(["keys", "new", "--key-file", str(tmp_path / "signing-keys")]) == 0
    finally:
        os.umask(old)
    assert (tmp_path / "signing-keys").stat().st_mode & 0o077 == 0
    assert KeyRing.from_file(tmp_path / "signing-keys").current is not None
