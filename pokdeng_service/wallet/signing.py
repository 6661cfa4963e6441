"""Signed calls to the platform's wallet: every request signed by pokdeng, the platform's answers verified.

A request carries one header (HTTP) or metadata entry (gRPC), ``x-pokdeng-signature``::

    keyId=sha256:3f0c...,alg=ed25519,ts=1765112345123,sig=<base64url, no padding>

``sig`` signs the UTF-8 bytes of four lines joined by ``\\n`` (``signed_text``)::

    POST
    /pokdeng.wallet.v1.PlatformWalletService/Debit
    1765112345123
    <hex SHA-256 of the body>

the body being the request's bytes as sent: the JSON body over HTTP, the message's deterministic
protobuf serialization over gRPC. ``alg`` is ``ed25519`` (RFC 8032) or ``rsa-sha256`` (RSASSA-PKCS1-v1_5
with SHA-256). ``keyId`` is ``sha256:`` and the first 32 hex digits of the SHA-256 of the public key's
DER SubjectPublicKeyInfo (``key_id``): both sides compute it from the key alone. ``ts`` is the signing
time in Unix milliseconds: the platform refuses a request outside its replay window (``window``
seconds either side of its clock) and one whose signature it has already seen within the window.

The platform may sign its answers alike, the first line ``ANSWER`` instead of the method and a fifth
line, the hex SHA-256 of the request's body (the answer is bound to the request it answers); with
the platform's public keys configured (``--wallet-platform-keys``) an answer without a valid
signature from one of them is no answer (an unknown outcome: the call is retried).

Keys are rotated without a restart: ``Signer`` re-reads its private key file when the file changes
(its size, mtime or inode: an atomic ``mv`` of a new key), and signs with the new key and its key id
from the next call; ``KeyFile`` (the platform's public keys, several PEM blocks in one file) is
re-read alike, so both the old and the new key are accepted while the platform switches. A private
key file is a secret file (``store.secret_files``: refused when its group or others may read it).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, padding, rsa

from pokdeng_service.store.secret_files import read_secret

HEADER = "x-pokdeng-signature"
ANSWER = "ANSWER"
WINDOW = 60.0  # seconds either side of the receiver's clock
ALGORITHMS = ("ed25519", "rsa-sha256")
_FIELD = re.compile(r"\s*([A-Za-z]+)=([^,]*)\s*")

PrivateKey = ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey
PublicKey = ed25519.Ed25519PublicKey | rsa.RSAPublicKey


class SignatureError(ValueError):
    """A key that cannot be used, or a signature that does not verify."""


def key_id(public: PublicKey) -> str:
    """``sha256:`` + 32 hex digits of the SHA-256 of the key's DER SubjectPublicKeyInfo."""
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(der).hexdigest()[:32]


def algorithm(key: PrivateKey | PublicKey) -> str:
    return "ed25519" if isinstance(key, ed25519.Ed25519PrivateKey | ed25519.Ed25519PublicKey) else "rsa-sha256"


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def signed_text(verb: str, path: str, ts_ms: int, body: bytes, request_body: bytes | None = None) -> bytes:
    """What a signature signs: verb (``POST``, or ``ANSWER``), path, timestamp, the body's digest (an answer: and
    its request's body's)."""
    lines = [verb, path, str(ts_ms), digest(body)]
    if request_body is not None:
        lines.append(digest(request_body))
    return "\n".join(lines).encode()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign_bytes(key: PrivateKey, data: bytes) -> bytes:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key.sign(data)
    return key.sign(data, padding.PKCS1v15(), hashes.SHA256())


def verify_bytes(key: PublicKey, signature: bytes, data: bytes) -> bool:
    try:
        if isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, data)
        else:
            key.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return False
    return True


def header(key: PrivateKey, verb: str, path: str, body: bytes, request_body: bytes | None = None,
           now_ms: int | None = None) -> str:  # fmt: skip
    """The header's value: ``key`` signs ``signed_text`` now (or at ``now_ms``)."""
    ts = int(time.time() * 1000) if now_ms is None else now_ms
    signature = sign_bytes(key, signed_text(verb, path, ts, body, request_body))
    return f"keyId={key_id(key.public_key())},alg={algorithm(key)},ts={ts},sig={_b64(signature)}"


@dataclass(frozen=True)
class Parsed:
    key_id: str
    alg: str
    ts_ms: int
    signature: bytes


def parse(value: str) -> Parsed:
    fields: dict[str, str] = {}
    for part in value.split(","):
        found = _FIELD.fullmatch(part)
        if found is None:
            raise SignatureError(f"not a signature header: {value[:80]!r}")
        fields[found.group(1)] = found.group(2).strip('"')
    try:
        return Parsed(fields["keyId"], fields["alg"], int(fields["ts"]), _unb64(fields["sig"]))
    except (KeyError, ValueError, binascii.Error) as error:
        raise SignatureError(f"not a signature header ({error}): {value[:80]!r}") from None


def load_private(data: bytes, what: str = "signing key") -> PrivateKey:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise SignatureError(f"the {what} is no PEM private key: {error}") from None
    if isinstance(key, rsa.RSAPrivateKey) and key.key_size < 2048:
        raise SignatureError(f"the {what} is an RSA key of {key.key_size} bits: 2048 at least")
    if not isinstance(key, ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey):
        raise SignatureError(f"the {what} is a {type(key).__name__}: Ed25519 or RSA only")
    return key


_PEM = re.compile(rb"-----BEGIN PUBLIC KEY-----.+?-----END PUBLIC KEY-----", re.S)


def load_public_keys(data: bytes, what: str = "public key file") -> dict[str, PublicKey]:
    """Every PEM public key (``BEGIN PUBLIC KEY``) of ``data``, by key id."""
    keys: dict[str, PublicKey] = {}
    for block in _PEM.findall(data):
        try:
            key = serialization.load_pem_public_key(block)
        except ValueError as error:
            raise SignatureError(f"the {what} holds a key that is not one: {error}") from None
        if not isinstance(key, ed25519.Ed25519PublicKey | rsa.RSAPublicKey):
            raise SignatureError(f"the {what} holds a {type(key).__name__}: Ed25519 or RSA only")
        keys[key_id(key)] = key
    if not keys:
        raise SignatureError(f"the {what} holds no PEM public key (-----BEGIN PUBLIC KEY-----)")
    return keys


class _Watched:
    """A file read again when it changes (size, mtime, inode)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.stamp: tuple[int, int, int] | None = None
        self.lock = threading.Lock()

    def changed(self) -> bool:
        st = os.stat(self.path)
        stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
        if stamp == self.stamp:
            return False
        self.stamp = stamp
        return True


class Signer:
    """pokdeng's signing key, from a secret file re-read when it changes (a rotation needs no restart)."""

    def __init__(self, path: str) -> None:
        self.file = _Watched(path)
        self.file.changed()
        self.key: PrivateKey = self._read()  # (OSError, SecretFileError, SignatureError: refused at the start)

    def _read(self) -> PrivateKey:
        return load_private(read_secret(self.file.path, "wallet signing key file"), "wallet signing key")

    def current(self) -> PrivateKey:
        with self.file.lock:
            try:
                if self.file.changed():
                    self.key = self._read()
            except (OSError, ValueError):  # (a key half written: the one before signs until the new one reads)
                self.file.stamp = None
            return self.key

    @property
    def key_id(self) -> str:
        return key_id(self.current().public_key())

    def sign(self, verb: str, path: str, body: bytes, request_body: bytes | None = None) -> str:
        return header(self.current(), verb, path, body, request_body)


class KeyFile:
    """Public keys accepted (the platform's, or the platform's view of pokdeng's), from a file of PEM blocks re-read
    when it changes, or given (``keys``)."""

    def __init__(self, path: str = "", keys: Iterable[PublicKey] = ()) -> None:
        self.file = _Watched(path) if path else None
        self._keys: dict[str, PublicKey] = {key_id(k): k for k in keys}
        if self.file is not None:
            self._keys = self._read()

    def _read(self) -> dict[str, PublicKey]:
        assert self.file is not None
        with open(self.file.path, "rb") as handle:
            self.file.changed()
            return load_public_keys(handle.read(), f"public key file {self.file.path}")

    def keys(self) -> dict[str, PublicKey]:
        if self.file is not None:
            with self.file.lock:
                try:
                    if self.file.changed():
                        self._keys = self._read()
                except (OSError, ValueError):  # (half written: the keys before stay until it reads)
                    self.file.stamp = None
        return self._keys


class Verifier:
    """Checks signatures: by an accepted key (``KeyFile``), within ``window`` seconds of now, and (``replays``) never
    the same signature twice within the window."""

    def __init__(self, keys: KeyFile, window: float = WINDOW, replays: bool = False) -> None:
        self.accepted = keys
        self.window = window
        self.replays = replays
        self._seen: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def problem(self, value: str | None, verb: str, path: str, body: bytes, request_body: bytes | None = None,
                now_ms: int | None = None) -> str:  # fmt: skip
        """What is wrong with the signature header ``value`` ("" if nothing)."""
        if not value:
            return "no signature"
        try:
            parsed = parse(value)
        except SignatureError as error:
            return str(error)
        key = self.accepted.keys().get(parsed.key_id)
        if key is None:
            return f"key {parsed.key_id} is not accepted"
        if parsed.alg != algorithm(key):
            return f"alg {parsed.alg} is not key {parsed.key_id}'s"
        now = int(time.time() * 1000) if now_ms is None else now_ms
        if abs(now - parsed.ts_ms) > self.window * 1000:
            return f"signed at {parsed.ts_ms}, outside the window of {self.window:g} s around {now}"
        if not verify_bytes(key, parsed.signature, signed_text(verb, path, parsed.ts_ms, body, request_body)):
            return "the signature does not verify"
        if self.replays:
            with self._lock:
                while self._seen and next(iter(self._seen.values())) < now - self.window * 1000:
                    self._seen.popitem(last=False)
                if parsed.signature in self._seen:
                    return "a replay: this signature was seen before"
                self._seen[parsed.signature] = parsed.ts_ms
        return ""


def verifier_of(path: str, window: float = WINDOW) -> Verifier:
    return Verifier(KeyFile(path), window)


__all__ = [
    "ALGORITHMS",
    "ANSWER",
    "HEADER",
    "WINDOW",
    "KeyFile",
    "SignatureError",
    "Signer",
    "Verifier",
    "header",
    "key_id",
    "load_private",
    "load_public_keys",
    "parse",
    "signed_text",
    "verifier_of",
]
