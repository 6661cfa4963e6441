"""Server seeds: fresh from the operating system's CSPRNG, sealed at rest until the round closes.

A round's server seed must survive a crash (the round resumes with the same
cards) yet stay secret until the reveal. It is stored encrypted (AES-256-GCM)
in its own stream; the key never enters the event store. The key comes from
configuration (``POKDENG_VAULT_KEY``, 64 hex characters) or a key file; the
embedded default keeps a key file beside the SQLite database. A key file is made with mode
0600, and one its group or others may access is refused (``store.secret_files``, the rule of every
secret file). ``DeferredVault`` reads the key only
when a seed is first needed (the audit tools: closed rounds need none).

The seal's associated data binds it to its round (``seal_aad``): version 2, what ``seal``
writes, is the round's stream uuid and its id, so that a seal opens only for the round
stream it was made for; version 1 (seals written before, and still opened) was the round
id alone. The ``SealedSeed`` records the version its seal was made with.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from pokdeng_service.store.secret_files import SecretFileError, read_secret

SEED_BYTES = 32
AAD_ROUND_ID = 1  # the round id alone: seals written before the stream binding
AAD_ROUND_STREAM = 2  # the round's stream uuid and its id
SEAL_AAD_VERSION = AAD_ROUND_STREAM  # what ``seal`` writes


class VaultError(RuntimeError):
    pass


def fresh_seed() -> bytes:
    """A new 256-bit server seed from the OS CSPRNG."""
    return secrets.token_bytes(SEED_BYTES)


def seal_aad(round_id: str, stream: UUID, version: int) -> bytes:
    """The associated data of a round's seal: version 2 is ``pokdeng-seed-v2`` ‖ 0x00 ‖ the round
    stream's uuid (16 bytes) ‖ the round id (UTF-8); version 1 the round id alone."""
    if version == AAD_ROUND_STREAM:
        return b"pokdeng-seed-v2\x00" + stream.bytes + round_id.encode()
    if version == AAD_ROUND_ID:
        return round_id.encode()
    raise VaultError(f"unknown associated data version {version!r} of the seal of round {round_id}")


class SeedVault:
    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise VaultError("the vault key must be 32 bytes (64 hex characters)")
        self._aead = AESGCM(key)
        self.key_id = AESGCM(key).encrypt(b"\x00" * 12, b"pokdeng-key-id", None)[:8].hex()
        # the key that authenticates page and resume tokens (api/paging.py): derived, so that every replica
        # (they share the vault key) accepts the others' tokens, and the vault key itself signs nothing
        self.token_key = hmac.new(key, b"pokdeng-page-tokens-v1", hashlib.sha256).digest()

    @classmethod
    def from_hex(cls, text: str) -> SeedVault:
        try:
            return cls(bytes.fromhex(text.strip()))
        except ValueError:
            raise VaultError("the vault key must be 64 hex characters") from None

    @classmethod
    def from_file(cls, path: str | Path, create: bool = True) -> SeedVault:
        """The key in ``path`` (64 hex characters), made there first (mode 0600) if missing and ``create``.

        A key file that its group or others may access (``mode & 0o077``) is refused."""
        file = Path(path)
        if not file.exists():
            if not create:
                raise VaultError(f"vault key file {file} not found")
            file.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(32) + "\n")
        try:
            text = read_secret(file, "vault key file").decode("utf-8", "replace")
        except OSError as error:
            raise VaultError(f"cannot read vault key file {file}: {error.strerror or error}") from None
        except SecretFileError as error:  # (the one rule of secret files: store/secret_files.py)
            raise VaultError(str(error)) from None
        return cls.from_hex(text)

    @classmethod
    def ephemeral(cls) -> SeedVault:
        """A key that lives only in this process (in-memory stores, tests)."""
        return cls(secrets.token_bytes(32))

    def seal(self, seed: bytes, round_id: str, stream: UUID) -> tuple[str, str]:
        """(nonce, ciphertext) in hex, bound to the round's id and stream (``SEAL_AAD_VERSION``)."""
        nonce = secrets.token_bytes(12)
        return nonce.hex(), self._aead.encrypt(nonce, seed, seal_aad(round_id, stream, SEAL_AAD_VERSION)).hex()

    def open(self, nonce_hex: str, sealed_hex: str, round_id: str, stream: UUID, aad_version: int) -> bytes:
        """The seed sealed for round ``round_id`` on stream ``stream`` (with the seal's AAD version)."""
        aad = seal_aad(round_id, stream, aad_version)
        try:
            return self._aead.decrypt(bytes.fromhex(nonce_hex), bytes.fromhex(sealed_hex), aad)
        except Exception as error:  # InvalidTag: wrong key, edited ciphertext, or another round's seal
            raise VaultError(
                f"cannot unseal the server seed of round {round_id}: wrong vault key, edited record, "
                "or a seal made for another round"
            ) from error

    def seal_secret(self, secret: bytes, aad: bytes) -> tuple[str, str]:
        """(nonce, ciphertext) in hex of another secret than a seed (a wallet session's token,
        ``store.sessions``), bound to ``aad``, which its caller makes distinct from a seal's."""
        nonce = secrets.token_bytes(12)
        return nonce.hex(), self._aead.encrypt(nonce, secret, aad).hex()

    def open_secret(self, nonce_hex: str, sealed_hex: str, aad: bytes) -> bytes:
        """The secret ``seal_secret`` sealed with ``aad`` (``VaultError``: another key, an edited record, or
        other associated data)."""
        try:
            return self._aead.decrypt(bytes.fromhex(nonce_hex), bytes.fromhex(sealed_hex), aad)
        except Exception as error:  # InvalidTag, a malformed hex
            raise VaultError("cannot open a sealed secret: wrong vault key, edited record, or not its own") from error


class DeferredVault(SeedVault):
    """A vault whose key is read only when a seed is first unsealed or sealed (the audit tools).

    A closed round's seed is revealed in its record, so checking closed rounds needs no key: a
    missing or unreadable key is reported (``VaultError``) only when an open round's seed is needed.
    """

    def __init__(self, load: Callable[[], SeedVault]) -> None:
        self._load = load
        self._vault: SeedVault | None = None
        self._lock = threading.Lock()

    def loaded(self, round_id: str = "") -> SeedVault:
        with self._lock:
            if self._vault is None:
                try:
                    self._vault = self._load()
                except (VaultError, ValueError, OSError) as error:
                    what = f"round {round_id} is open: its server seed is sealed, and " if round_id else ""
                    raise VaultError(f"{what}the vault key is needed to unseal it: {error}") from None
            return self._vault

    @property
    def key_id(self) -> str:
        return self.loaded().key_id

    @key_id.setter
    def key_id(self, value: str) -> None:
        raise AttributeError("the key id of a deferred vault is its key's")

    @property
    def token_key(self) -> bytes:
        return self.loaded().token_key

    @token_key.setter
    def token_key(self, value: bytes) -> None:
        raise AttributeError("the token key of a deferred vault is its key's")

    def seal(self, seed: bytes, round_id: str, stream: UUID) -> tuple[str, str]:
        return self.loaded(round_id).seal(seed, round_id, stream)

    def open(self, nonce_hex: str, sealed_hex: str, round_id: str, stream: UUID, aad_version: int) -> bytes:
        return self.loaded(round_id).open(nonce_hex, sealed_hex, round_id, stream, aad_version)

    def seal_secret(self, secret: bytes, aad: bytes) -> tuple[str, str]:
        return self.loaded().seal_secret(secret, aad)

    def open_secret(self, nonce_hex: str, sealed_hex: str, aad: bytes) -> bytes:
        return self.loaded().open_secret(nonce_hex, sealed_hex, aad)
