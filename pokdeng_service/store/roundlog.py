"""The store's append-only log of closed rounds: one Merkle leaf per closed round, and signed tree heads.

``RoundLog`` is one stream per store (per partition: ``ROUND_LOG_UUID`` is the same id in
every store). Its events:

* ``Started(log_id)``: the log's id, ``pokdeng-`` and 16 random hex digits, chosen when the
  store's first round closes; every signed head names it.
* ``LeafAppended(index, round_id, round_digest, leaf)``: one per closed round (settled or
  voided), saved in the transaction that closes the round (with the table's
  ``round_finished``); ``round_digest`` is the round's last chain digest and ``leaf`` =
  ``merkle.leaf_hash(round_id, round_digest)`` in hex; ``index`` counts the leaves from 0.
* ``HeadSigned(log_id, key_id, tree_size, root_hash, time_ms, signature, note)``: a signed tree
  head (``store/signing.py``; ``time_ms`` is its ``timestamp``, which names the library's own
  time of an event) over the first ``tree_size`` leaves, and ``note``: the same head as a C2SP
  checkpoint, a signed note by the same key (``store/notes.py``; empty in heads signed before
  notes were). The log's *origin* (the note's first line) is fixed by its first note.

The state is the log's size, its *frontier* (``merkle.frontier_append``: the roots of its
perfect subtrees, so the current root costs O(log n)) and the last head. Proofs need the
leaves themselves: ``application/checkpoints.py`` reads them from the stream.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable
from typing import Any, NamedTuple

from eventsourcing.domain import Aggregate, event

from pokdeng_service.store import fastpaths, merkle, notes
from pokdeng_service.store.facts import RecordedEvent
from pokdeng_service.store.signing import SigningError, SigningKey, TreeHead

ROUND_LOG_UUID = uuid.uuid5(uuid.UUID("5b0f1a52-6d6e-4f3c-9c57-706f6b64656e"), "round-log")
"""The log's stream id: one log per store (the namespace is ``aggregates.NAMESPACE``)."""
LEAF_APPENDED = "LeafAppended"
HEAD_SIGNED = "HeadSigned"


def round_log_uuid(_log_id: str = "") -> uuid.UUID:
    return ROUND_LOG_UUID


def new_log_id() -> str:
    return f"pokdeng-{secrets.token_hex(8)}"


class RoundLog(Aggregate):
    """The Merkle log of a store's closed rounds and its signed heads."""

    log_id: str
    size: int
    frontier: list[str]  # hex, largest subtree first
    head: dict[str, Any] | None

    class Started(Aggregate.Created):
        log_id: str

    @staticmethod
    def create_id(log_id: str) -> uuid.UUID:
        return ROUND_LOG_UUID

    @event(Started)
    def __init__(self, log_id: str) -> None:
        self.log_id = log_id
        self.size = 0
        self.frontier = []
        self.head = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return fastpaths.copy_aggregate(self, memo)

    @property
    def root(self) -> bytes:
        """The Merkle root of every leaf so far."""
        return merkle.frontier_root([bytes.fromhex(h) for h in self.frontier])

    def append(self, round_id: str, round_digest: str) -> int:
        """Add a closed round's leaf; its index."""
        index = self.size
        self.leaf_appended(index, round_id, round_digest, merkle.leaf_hash(round_id, round_digest).hex())
        return index

    @event("LeafAppended")
    def leaf_appended(self, index: int, round_id: str, round_digest: str, leaf: str) -> None:
        frontier = merkle.frontier_append(self.size, [bytes.fromhex(h) for h in self.frontier], bytes.fromhex(leaf))
        self.frontier = [h.hex() for h in frontier]
        self.size += 1

    @property
    def origin(self) -> str:
        """The log's origin as its notes name it (the first line of its last head's note), or "" before any."""
        note = (self.head or {}).get("note") or ""
        return str(note).split("\n", 1)[0]

    def sign(self, key: SigningKey, timestamp: int, origin_prefix: str = "") -> TreeHead:
        """Sign a head over every leaf so far, and the same head as a C2SP checkpoint note (under the log's
        origin: that of its notes, or ``<origin_prefix>/<log id>`` for its first note)."""
        head = key.sign(self.log_id, self.size, self.root, timestamp)
        origin = self.origin or notes.origin_of(origin_prefix, self.log_id)
        note = notes.checkpoint_note(key, origin, self.size, self.root)
        self.head_signed(head.log_id, head.key_id, head.tree_size, head.root_hash, head.timestamp, head.signature, note)
        return head

    @event("HeadSigned")
    def head_signed(
        self, log_id: str, key_id: str, tree_size: int, root_hash: str, time_ms: int, signature: str, note: str = ""
    ) -> None:
        self.head = {
            "log_id": log_id,
            "key_id": key_id,
            "tree_size": tree_size,
            "root_hash": root_hash,
            "timestamp": time_ms,
            "signature": signature,
            "note": note,
        }


class Leaf(NamedTuple):
    """One leaf of the log as stored: its stream position, index, round, the round's last digest, hash."""

    position: int
    logged_index: int  # the index its event states (the audit checks it against its place)
    round_id: str
    digest: str
    leaf: str


class LogRecord(NamedTuple):
    """The log's stream read once: its id, leaves and signed heads (with their stream positions), and the heads'
    notes by stream position (a head signed before notes has none)."""

    log_id: str
    leaves: list[Leaf]
    heads: list[tuple[int, TreeHead]]
    notes: dict[int, str]

    @property
    def hashes(self) -> list[bytes]:
        """The leaf hashes as stored (a malformed one as 32 zero bytes: no proof through it verifies)."""
        return [_hash(leaf.leaf) for leaf in self.leaves]


def leaf_problem(index: int, leaf: Leaf) -> str | None:
    """What is wrong with the log's leaf ``index`` as stored, or None: it says it is that leaf, and its hash is
    the leaf hash of its round id and digest (the log's audit and ``SignTreeHead`` both check each leaf so)."""
    if leaf.logged_index != index:
        return f"leaf {index} says it is leaf {leaf.logged_index}"
    if merkle.leaf_hash(leaf.round_id, leaf.digest).hex() != leaf.leaf:
        return f"leaf {index} (round {leaf.round_id}) is not the hash of its round id and digest"
    return None


def covers(head: TreeHead, hashes: list[bytes]) -> bool:
    """Whether a signed head's root is the root of the first ``tree_size`` of the log's leaf hashes."""
    return head.tree_size <= len(hashes) and merkle.root(hashes[: head.tree_size]).hex() == head.root_hash


def _hash(text: str) -> bytes:
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raw = b""
    return raw if len(raw) == 32 else bytes(32)


def read_log(events: Iterable[RecordedEvent]) -> LogRecord:
    """The leaves and heads of the log's stored events, in stream order."""
    log_id = ""
    leaves: list[Leaf] = []
    heads: list[tuple[int, TreeHead]] = []
    head_notes: dict[int, str] = {}
    for stored in events:
        data = stored.data
        if stored.kind == LEAF_APPENDED:  # (a malformed leaf is kept, with what it has: the log's audit names it)
            index = data.get("index")
            leaves.append(
                Leaf(
                    stored.position,
                    index if type(index) is int else -1,
                    str(data.get("round_id", "")),
                    str(data.get("round_digest", "")),
                    str(data.get("leaf", "")),
                )
            )
        elif stored.kind == HEAD_SIGNED:
            try:
                fields = {k: v for k, v in data.items() if k != "time_ms"}
                heads.append((stored.position, TreeHead.from_dict({**fields, "timestamp": data.get("time_ms")})))
            except SigningError:
                continue  # a malformed head is no head (the log's audit names it)
            note = data.get("note")
            if note:
                head_notes[stored.position] = str(note)
        elif stored.position == 1:
            log_id = str(data.get("log_id", ""))
    return LogRecord(log_id, leaves, heads, head_notes)
