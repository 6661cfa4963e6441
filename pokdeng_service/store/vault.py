"""Server seeds: fresh from the operating system's CSPRNG, sealed at rest until the round closes.

A round's server seed must survive a crash (the round resumes with the same
cards) yet stay secret until the reveal. It is stored encrypted (AES-256-GCM)
in its own stream; the key never enters the event store. The key comes from
configuration (``POKDENG_VAULT_KEY``, 64 hex characters) or a key file; the
embedded default keeps a key file beside the SQLite database.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SEED_BYTES = 32


class VaultError(RuntimeError):
    pass


def fresh_seed() -> bytes:
    """A new 256-bit server seed from the OS CSPRNG."""
    return secrets.token_bytes(SEED_BYTES)


class SeedVault:
    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise VaultError("the vault key must be 32 bytes (64 hex characters)")
        self._aead = AESGCM(key)
        self.key_id = AESGCM(key).encrypt(b"\x00" * 12, b"pokdeng-key-id", None)[:8].hex()

    @classmethod
    def from_hex(cls, text: str) -> SeedVault:
        try:
            return cls(bytes.fromhex(text.strip()))
        except ValueError:
            raise VaultError("the vault key must be 64 hex characters") from None

    @classmethod
    def from_file(cls, path: str | Path, create: bool = True) -> SeedVault:
        file = Path(path)
        if not file.exists():
            if not create:
                raise VaultError(f"vault key file {file} not found")
            file.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(32) + "\n")
        return cls.from_hex(file.read_text())

    @classmethod
    def ephemeral(cls) -> SeedVault:
        """A key that lives only in this process (in-memory stores, tests)."""
        return cls(secrets.token_bytes(32))

    def seal(self, seed: bytes, round_id: str) -> tuple[str, str]:
        nonce = secrets.token_bytes(12)
        return nonce.hex(), self._aead.encrypt(nonce, seed, round_id.encode()).hex()

    def open(self, nonce_hex: str, sealed_hex: str, round_id: str) -> bytes:
        try:
            return self._aead.decrypt(bytes.fromhex(nonce_hex), bytes.fromhex(sealed_hex), round_id.encode())
        except Exception as error:  # InvalidTag: wrong key or edited ciphertext
            raise VaultError(
                f"cannot unseal the server seed of round {round_id}: wrong vault key or edited record"
            ) from error
