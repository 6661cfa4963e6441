"""Signed tree heads as C2SP checkpoints: signed notes (c2sp.org/signed-note) of tlog-checkpoint bodies.

Every signed tree head (``store/signing.py``) is also published as a *checkpoint*, the form Go's
``golang.org/x/mod/sumdb/note`` and ``sumdb/tlog``, transparency-dev's witnesses and monitors read. The
note's text (c2sp.org/tlog-checkpoint) is three lines, each ending in a newline (U+000A)::

    <origin>
    <tree size, decimal, no leading zero>
    <root hash, standard base64 with padding>

and the text is followed by an empty line and one signature line per signer::

    — <key name> <base64(4-byte key hash || 64-byte Ed25519 signature of the text)>

(an em dash U+2014 and a space first). The key hash is the first 4 bytes, big-endian, of
``SHA-256(key name || 0x0A || 0x01 || the 32-byte public key)``; a verifier is given the key as a
*verifier key* ``<name>+<key hash, 8 hex digits>+<base64(0x01 || public key)>``. The log signs with
the key that signs its tree heads, under the key name of its origin (tlog-checkpoint: the key name
SHOULD be the origin). The two signed messages cannot be taken for each other: a tree head's signed
bytes start with ``pokdeng-tree-head-v1`` and a 0x00 byte, and a note holds no control character.

The origin is ``<prefix>/<log id>``, the prefix being ``$POKDENG_LOG_ORIGIN`` (default
``pokdeng.example``): a schema-less URL-like name (no space, no ``+``), fixed by the log's first note.

``open_note`` verifies a note as ``note.Open`` does: the text up to the last empty line, signatures
by unknown keys ignored, a failing signature by a known key a failure of the whole note, and at least
one known key's signature required. docs/checkpoints.md describes the format byte for byte.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from pokdeng_service.store.signing import SigningKey

ALG_ED25519 = 0x01
"""The signature type byte of Ed25519 (c2sp.org/signed-note)."""
DEFAULT_ORIGIN_PREFIX = "pokdeng.example"
ORIGIN_ENV = "POKDENG_LOG_ORIGIN"
SIGNATURE_PREFIX = "— "  # an em dash (U+2014) and a space
MAX_SIGNATURES = 100  # as golang.org/x/mod/sumdb/note (the spec asks for at least 16)
MAX_TREE_SIZE = 2**63 - 1  # Go's tlog sizes are int64
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


class NoteError(ValueError):
    """A malformed note, checkpoint or verifier key, or a note whose signatures do not verify."""


def valid_name(name: str) -> bool:
    """A key name (or an origin): not empty, no space of any kind, no ``+``, no control character."""
    return bool(name) and "+" not in name and not any(ch.isspace() or ord(ch) < 0x20 for ch in name)


def key_hash(name: str, public: bytes) -> int:
    """The 32-bit key hash of an Ed25519 key under ``name``: SHA-256(name || 0x0A || 0x01 || key)[:4]."""
    return int.from_bytes(hashlib.sha256(name.encode() + b"\n" + bytes([ALG_ED25519]) + public).digest()[:4], "big")


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise NoteError(f"not standard base64: {text[:80]!r}") from None


@dataclass(frozen=True)
class Verifier:
    """An Ed25519 verifier key: a key name and a public key (and the key hash they give)."""

    name: str
    public: bytes

    def __post_init__(self) -> None:
        if not valid_name(self.name):
            raise NoteError(f"not a key name (empty, or with a space, a '+' or a control character): {self.name!r}")
        if len(self.public) != 32:
            raise NoteError("an Ed25519 public key is 32 bytes")

    @property
    def key_hash(self) -> int:
        return key_hash(self.name, self.public)

    def __str__(self) -> str:
        """The verifier key text: ``<name>+<key hash, 8 hex digits>+<base64(0x01 || public key)>``."""
        encoded = base64.b64encode(bytes([ALG_ED25519]) + self.public).decode()
        return f"{self.name}+{self.key_hash:08x}+{encoded}"

    @classmethod
    def parse(cls, text: str) -> Verifier:
        """A verifier key from its text (as ``note.NewVerifier`` reads it)."""
        name, _, rest = text.strip().partition("+")
        hash_hex, _, key64 = rest.partition("+")
        if len(hash_hex) != 8 or not re.fullmatch(r"[0-9a-fA-F]{8}", hash_hex):
            raise NoteError(f"not a verifier key (<name>+<8 hex digits>+<base64 key>): {text.strip()[:80]!r}")
        raw = _b64decode(key64)
        if len(raw) != 33 or raw[0] != ALG_ED25519:
            raise NoteError("the verifier key is not an Ed25519 key (0x01 and 32 bytes)")
        verifier = cls(name, raw[1:])
        if verifier.key_hash != int(hash_hex, 16):
            raise NoteError(f"the verifier key's hash {hash_hex} is not that of its name and key")
        return verifier

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


def parse_verifiers(text: str) -> list[Verifier]:
    """Verifier keys, one a line (``#`` starts a comment): what ``pokdeng checkpoints vkey`` prints."""
    found = [Verifier.parse(line.split("#", 1)[0]) for line in text.splitlines() if line.split("#", 1)[0].strip()]
    if not found:
        raise NoteError("no verifier key found")
    return found


@dataclass(frozen=True)
class Checkpoint:
    """The body of a C2SP tlog-checkpoint: the log's origin, its tree size and root hash (32 bytes)."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        """The note text, each line ending in a newline."""
        if not valid_name(self.origin):
            raise NoteError(f"not an origin (empty, or with a space, a '+' or a control character): {self.origin!r}")
        if not 0 <= self.size <= MAX_TREE_SIZE or len(self.root) != 32:
            raise NoteError("a checkpoint has a size of 0 to 2^63 - 1 and a root hash of 32 bytes")
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode(), *self.extensions]
        return "".join(line + "\n" for line in lines)

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """A checkpoint from a note's text (c2sp.org/tlog-checkpoint): three non-empty lines at least."""
        if not text.endswith("\n"):
            raise NoteError("a checkpoint's text ends with a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3 or any(not line for line in lines):
            raise NoteError("a checkpoint is at least three lines (origin, tree size, root hash), none empty")
        origin, size, root = lines[0], lines[1], lines[2]
        if not _DECIMAL.fullmatch(size) or int(size) > MAX_TREE_SIZE:
            raise NoteError(f"the tree size is not a decimal number without leading zeros: {size[:40]!r}")
        raw = _b64decode(root)
        if len(raw) != 32 or base64.b64encode(raw).decode() != root:
            raise NoteError("the root hash is not the standard base64 of 32 bytes")
        return cls(origin, int(size), raw, tuple(lines[3:]))


@dataclass(frozen=True)
class NoteSignature:
    """One signature line of a note: the key name, the key hash and the signature bytes."""

    name: str
    key_hash: int
    signature: bytes

    def line(self) -> str:
        encoded = base64.b64encode(self.key_hash.to_bytes(4, "big") + self.signature).decode()
        return f"{SIGNATURE_PREFIX}{self.name} {encoded}\n"


@dataclass(frozen=True)
class Note:
    """A signed note, split (its signatures not checked): the text (with its last newline) and its signatures."""

    text: str
    signatures: tuple[NoteSignature, ...]

    def render(self) -> str:
        return self.text + "\n" + "".join(s.line() for s in self.signatures)

    @classmethod
    def parse(cls, raw: str | bytes) -> Note:
        """The note's text and signature lines, as ``note.Open`` splits them (``NoteError`` if malformed)."""
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise NoteError("a note is UTF-8") from None
        if any(ord(ch) < 0x20 and ch != "\n" for ch in raw):
            raise NoteError("a note holds no control character but the newline")
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in raw):
            raise NoteError("a note is UTF-8")
        split = raw.rfind("\n\n")
        if split < 0:
            raise NoteError("a note is its text, an empty line, then its signature lines")
        text, lines = raw[: split + 1], raw[split + 2 :]
        if not lines.endswith("\n"):
            raise NoteError("a note ends with a signature line and its newline")
        signatures = []
        for line in lines[:-1].split("\n"):
            if not line.startswith(SIGNATURE_PREFIX):
                raise NoteError(f"a signature line starts with an em dash and a space: {line[:80]!r}")
            name, _, encoded = line[len(SIGNATURE_PREFIX) :].partition(" ")
            if not valid_name(name) or not encoded:
                raise NoteError(f"a signature line is '— <key name> <base64>': {line[:80]!r}")
            data = _b64decode(encoded)
            if len(data) < 5:
                raise NoteError("a signature is 4 bytes of key hash and a signature")
            signatures.append(NoteSignature(name, int.from_bytes(data[:4], "big"), data[4:]))
            if len(signatures) > MAX_SIGNATURES:
                raise NoteError(f"more than {MAX_SIGNATURES} signatures")
        return cls(text, tuple(signatures))


@dataclass(frozen=True)
class OpenedNote:
    """A note whose signatures were checked: its text, the signatures verified and those by unknown keys."""

    text: str
    verified: tuple[NoteSignature, ...]
    unverified: tuple[NoteSignature, ...]


def open_note(raw: str | bytes, verifiers: Iterable[Verifier]) -> OpenedNote:
    """Verify a note with the verifier keys given, as ``note.Open`` does (``NoteError`` when it fails)."""
    note = Note.parse(raw)
    known: dict[tuple[str, int], list[Verifier]] = {}
    for verifier in verifiers:
        known.setdefault((verifier.name, verifier.key_hash), []).append(verifier)
    verified: list[NoteSignature] = []
    unverified: list[NoteSignature] = []
    seen: set[tuple[str, int]] = set()
    for signature in note.signatures:
        key = (signature.name, signature.key_hash)
        candidates = known.get(key)
        if candidates is None:
            if signature not in unverified:
                unverified.append(signature)
            continue
        if len(candidates) > 1:
            raise NoteError(f"ambiguous key {signature.name}+{signature.key_hash:08x}")
        if key in seen:
            continue
        seen.add(key)
        if not candidates[0].verify(note.text.encode(), signature.signature):
            raise NoteError(f"invalid signature for key {signature.name}+{signature.key_hash:08x}")
        verified.append(signature)
    if not verified:
        names = ", ".join(f"{s.name}+{s.key_hash:08x}" for s in note.signatures)
        raise NoteError(f"the note has no signature by a key given (it is signed by {names})")
    return OpenedNote(note.text, tuple(verified), tuple(unverified))


def sign_note(text: str, name: str, key: SigningKey) -> str:
    """The note of ``text`` signed by ``key`` under ``name`` (one signature line)."""
    if not text.endswith("\n"):
        raise NoteError("a note's text ends with a newline")
    Note.parse(text + "\n" + NoteSignature(name, 0, b"\x00").line())  # the text and the name are a note's
    verifier = Verifier(name, key.public)
    signature = Ed25519PrivateKey.from_private_bytes(key.seed).sign(text.encode())
    return text + "\n" + NoteSignature(name, verifier.key_hash, signature).line()


def checkpoint_note(key: SigningKey, origin: str, size: int, root: bytes) -> str:
    """A tree head as a C2SP checkpoint, signed by ``key`` under the key name ``origin``."""
    return sign_note(Checkpoint(origin, size, root).text(), origin, key)


def origin_of(prefix: str, log_id: str) -> str:
    """The origin of log ``log_id`` under ``prefix`` (``$POKDENG_LOG_ORIGIN``; empty: the default)."""
    origin = f"{(prefix or DEFAULT_ORIGIN_PREFIX).rstrip('/')}/{log_id}"
    if not valid_name(origin):
        raise NoteError(
            f"not an origin: {origin!r} ({ORIGIN_ENV} is a schema-less URL-like name, without spaces or '+')"
        )
    return origin
