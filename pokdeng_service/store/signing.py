"""Signed tree heads: Ed25519 keys and key ids, the exact bytes a head signs, key files.

A *signed tree head* (docs/checkpoints.md) states, under the operator's Ed25519 key, that the
store's log of closed rounds (``store/roundlog.py``) had ``tree_size`` leaves with Merkle root
``root_hash`` at ``timestamp``. The signature covers exactly ``TreeHead.signed_bytes()``, a
TLS-style structure in the manner of RFC 9162's ``TreeHeadSignature``::

    opaque  context[21]  = "pokdeng-tree-head-v1" 0x00
    opaque  log_id<1..255>      (1-byte length, then the log id in UTF-8)
    opaque  key_id<1..255>      (1-byte length, then the key id in ASCII)
    uint64  timestamp           (milliseconds since 1970-01-01T00:00:00Z, big-endian)
    uint64  tree_size           (big-endian)
    opaque  root_hash<32..255>  (1-byte length 0x20, then the 32 bytes of the root)

A key id is the first 8 bytes of SHA-256 of the raw 32-byte public key, in lowercase hex.
Keys never enter the event store: the server's *key ring* comes from configuration
(``POKDENG_SIGNING_KEY``, or a key file, see ``KeyRing``), and a verifier is handed the
public keys (``PublicKeys``), several of them after a rotation.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from pokdeng_service.store.secret_files import SecretFileError, read_secret

HEAD_FORMAT = "pokdeng-signed-tree-head"
HEAD_VERSION = 1
CONTEXT = b"pokdeng-tree-head-v1\x00"
KEYS_FORMAT = "pokdeng-signing-keys"
KEYS_VERSION = 1
HEAD_FIELDS = ("log_id", "key_id", "tree_size", "root_hash", "timestamp", "signature")


class SigningError(ValueError):
    """A malformed key, key file or tree head."""


def key_id_of(public: bytes) -> str:
    """The id of a public key: the first 8 bytes of SHA-256 of its raw 32 bytes, in hex."""
    return hashlib.sha256(public).digest()[:8].hex()


def _opaque(value: bytes, what: str) -> bytes:
    if not 1 <= len(value) <= 255:
        raise SigningError(f"{what} must be 1 to 255 bytes")
    return bytes([len(value)]) + value


@dataclass(frozen=True)
class TreeHead:
    """A tree head and, once signed, its Ed25519 signature (hex)."""

    log_id: str
    key_id: str
    tree_size: int
    root_hash: str  # 64 hex digits
    timestamp: int  # milliseconds since the Unix epoch
    signature: str = ""  # 128 hex digits

    def signed_bytes(self) -> bytes:
        """Exactly what the signature covers (the module's docstring and docs/checkpoints.md)."""
        root = bytes.fromhex(self.root_hash)
        if len(root) != 32:
            raise SigningError("root_hash must be 32 bytes (64 hex digits)")
        if not (0 <= self.timestamp < 2**64 and 0 <= self.tree_size < 2**64):
            raise SigningError("timestamp and tree_size are unsigned 64-bit integers")
        return (
            CONTEXT
            + _opaque(self.log_id.encode(), "log_id")
            + _opaque(self.key_id.encode("ascii"), "key_id")
            + struct.pack(">QQ", self.timestamp, self.tree_size)
            + _opaque(root, "root_hash")
        )

    @property
    def time(self) -> str:
        """The timestamp as ISO 8601 text (UTC, milliseconds); a time no calendar holds as its milliseconds."""
        try:
            return datetime.fromtimestamp(self.timestamp / 1000, tz=UTC).isoformat(timespec="milliseconds")
        except (OverflowError, OSError, ValueError):
            return f"{self.timestamp} ms after the epoch"

    def as_dict(self) -> dict[str, Any]:
        """The head's JSON form (bundles, the CLI, the API's ``head_json``)."""
        return {
            "format": HEAD_FORMAT,
            "format_version": HEAD_VERSION,
            **{name: getattr(self, name) for name in HEAD_FIELDS},
        }

    @classmethod
    def from_dict(cls, data: Any) -> TreeHead:
        """A head from its JSON form (or from the fields of a stored ``HeadSigned`` event)."""
        if not isinstance(data, dict):
            raise SigningError("a tree head is a JSON object")
        version = data.get("format_version", HEAD_VERSION)
        if data.get("format", HEAD_FORMAT) != HEAD_FORMAT or type(version) is not int or version != HEAD_VERSION:
            raise SigningError(f"not a {HEAD_FORMAT} version {HEAD_VERSION}")
        try:
            values = {name: data[name] for name in HEAD_FIELDS}
        except KeyError as error:
            raise SigningError(f"a tree head needs {error.args[0]!r}") from None
        for name in ("log_id", "key_id", "root_hash", "signature"):
            if type(values[name]) is not str:
                raise SigningError(f"{name} must be text")
        for name in ("tree_size", "timestamp"):
            if type(values[name]) is not int:
                raise SigningError(f"{name} must be an integer")
        return cls(**values)


@dataclass(frozen=True)
class SigningKey:
    """An Ed25519 private key (its 32-byte seed) and its public half."""

    seed: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.seed) != 32:
            raise SigningError("an Ed25519 private key is 32 bytes (64 hex digits)")

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(os.urandom(32))

    @classmethod
    def from_hex(cls, text: str) -> SigningKey:
        try:
            return cls(bytes.fromhex(text.strip()))
        except ValueError:
            raise SigningError("the signing key must be 64 hex digits") from None

    @property
    def _private(self) -> Ed25519PrivateKey:
        return Ed25519PrivateKey.from_private_bytes(self.seed)

    @property
    def public(self) -> bytes:
        return self._private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    @property
    def key_id(self) -> str:
        return key_id_of(self.public)

    def sign(self, log_id: str, tree_size: int, root_hash: bytes, timestamp: int) -> TreeHead:
        head = TreeHead(log_id, self.key_id, tree_size, root_hash.hex(), timestamp)
        signature = self._private.sign(head.signed_bytes())
        return TreeHead(log_id, self.key_id, tree_size, root_hash.hex(), timestamp, signature.hex())


def _public_key(text: str) -> bytes:
    try:
        raw = bytes.fromhex(text.strip())
    except ValueError:
        raise SigningError(f"not a public key (64 hex digits): {text.strip()[:80]!r}") from None
    if len(raw) != 32:
        raise SigningError("an Ed25519 public key is 32 bytes (64 hex digits)")
    return raw


class PublicKeys:
    """Ed25519 public keys by key id: what a verifier holds (every key that ever signed)."""

    def __init__(self, keys: Iterable[bytes] = ()) -> None:
        self._keys: dict[str, bytes] = {}
        for raw in keys:
            self.add(raw)

    def add(self, raw: bytes) -> str:
        if len(raw) != 32:
            raise SigningError("an Ed25519 public key is 32 bytes")
        key_id = key_id_of(raw)
        self._keys[key_id] = raw
        return key_id

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._keys

    def hex(self, key_id: str) -> str:
        return self._keys[key_id].hex()

    @classmethod
    def parse(cls, text: str) -> PublicKeys:
        """Public keys from text: a key file of ``pokdeng keys new`` (JSON), or lines of ``[KEY_ID] PUBLIC_HEX``
        (what ``pokdeng keys show`` prints; ``#`` starts a comment), or one key's 64 hex digits."""
        stripped = text.strip()
        if stripped.startswith("{"):
            return KeyRing.from_json(stripped).public
        keys = cls()
        for line in stripped.splitlines():
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            raw = _public_key(words[-1])
            key_id = keys.add(raw)
            if len(words) > 1 and words[0] != key_id:
                raise SigningError(f"key id {words[0]} does not match its public key (whose id is {key_id})")
        if not keys:
            raise SigningError("no public key found")
        return keys

    @classmethod
    def load(cls, value: str) -> PublicKeys:
        """``--key``: a file holding public keys, or a public key's 64 hex digits."""
        path = Path(value)
        if len(value) == 64 and not path.exists():
            return cls([_public_key(value)])
        try:
            return cls.parse(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise SigningError(f"cannot read the key file {value}: {error.strerror or error}") from None

    def merge(self, other: PublicKeys) -> PublicKeys:
        merged = PublicKeys(self._keys.values())
        for raw in other._keys.values():
            merged.add(raw)
        return merged

    def check(self, head: TreeHead) -> tuple[bool, str]:
        """Whether the head's signature verifies with the key its ``key_id`` names, and why not."""
        raw = self._keys.get(head.key_id)
        if raw is None:
            given = ", ".join(self) or "none"
            return False, f"signed by key {head.key_id}, which is not among the keys given ({given})"
        try:
            signature = bytes.fromhex(head.signature)
            Ed25519PublicKey.from_public_bytes(raw).verify(signature, head.signed_bytes())
        except (ValueError, InvalidSignature, SigningError):
            return False, f"the signature does not verify with key {head.key_id}"
        return True, f"Ed25519 signature of key {head.key_id}"


@dataclass
class KeyRing:
    """The server's signing keys: the current private key (None: no signing) and every public key.

    Its file (``pokdeng keys new|rotate|show``; mode 0600) is JSON::

        {"format": "pokdeng-signing-keys", "format_version": 1, "current": KEY_ID,
         "keys": [{"key_id", "public_key", "private_key" (the current key only), "created", "retired"}]}

    A rotation makes a new current key and keeps the old ones' public halves (their private
    halves are dropped), so heads signed before stay verifiable.
    """

    current: SigningKey | None = None
    public: PublicKeys = field(default_factory=PublicKeys)
    entries: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, key: SigningKey) -> KeyRing:
        return cls(key, PublicKeys([key.public]), [_entry(key)])

    @classmethod
    def from_json(cls, text: str) -> KeyRing:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise SigningError(f"the key file is not JSON: {error}") from None
        if not isinstance(data, dict) or data.get("format") != KEYS_FORMAT:
            raise SigningError(f"not a {KEYS_FORMAT} file")
        ring = cls(entries=list(data.get("keys", [])))
        for entry in ring.entries:
            raw = _public_key(str(entry.get("public_key", "")))
            if ring.public.add(raw) != entry.get("key_id"):
                raise SigningError(f"key id {entry.get('key_id')} does not match its public key")
            private = entry.get("private_key")
            if private and entry.get("key_id") == data.get("current"):
                key = SigningKey.from_hex(str(private))
                if key.public != raw:
                    raise SigningError(f"the private key of {entry['key_id']} does not match its public key")
                ring.current = key
        return ring

    @classmethod
    def from_file(cls, path: str | Path) -> KeyRing:
        """The key file at ``path``; one its group or others may access is refused (``store.secret_files``)."""
        try:
            raw = read_secret(path, "signing key file")
        except OSError as error:
            raise SigningError(f"cannot read the key file {path}: {error.strerror or error}") from None
        except SecretFileError as error:
            raise SigningError(str(error)) from None
        return cls.from_json(raw.decode("utf-8"))

    def to_json(self) -> str:
        current = self.current.key_id if self.current else None
        data = {"format": KEYS_FORMAT, "format_version": KEYS_VERSION, "current": current, "keys": self.entries}
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    def save(self, path: str | Path, *, new: bool = False) -> None:
        """Write the file with mode 0600 (atomically: a temporary file renamed over it)."""
        file = Path(path)
        if new and file.exists():
            raise SigningError(f"{file} exists already: `pokdeng keys rotate` adds a key to it")
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{file.name}.", dir=file.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(self.to_json())
            os.replace(temporary, file)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def rotate(self) -> SigningKey:
        """A new current key; the old keys keep only their public halves."""
        now = _now()
        for entry in self.entries:
            if entry.pop("private_key", None) is not None or not entry.get("retired"):
                entry["retired"] = entry.get("retired") or now
        key = SigningKey.generate()
        self.entries.append(_entry(key))
        self.public.add(key.public)
        self.current = key
        return key

    def describe(self) -> list[str]:
        """One line per key, ``KEY_ID PUBLIC_HEX  # current|retired WHEN (created WHEN)``: what ``--key`` reads."""
        lines = []
        for entry in self.entries:
            current = self.current is not None and entry["key_id"] == self.current.key_id
            state = "current" if current else f"retired {entry.get('retired') or '?'}"
            lines.append(f"{entry['key_id']} {entry['public_key']}  # {state} (created {entry.get('created', '?')})")
        return lines


def _now() -> str:
    return datetime.now(tz=UTC).isoformat(timespec="seconds")


def _entry(key: SigningKey) -> dict[str, Any]:
    return {"key_id": key.key_id, "public_key": key.public.hex(), "private_key": key.seed.hex(), "created": _now()}
