"""Anchors: signed tree heads over the store's log of closed rounds, checked offline and live.

* ``check_anchor``: a bundle's round against the signed head it carries (``verify_bundle``):
  the leaf recomputed from the round id and its last chain digest, the inclusion proof up to
  the head's root, and the head's signature with the public keys given. Without a head, or
  without keys, the verdict says plainly that the bundle is *unanchored*: without keys its
  verdict is ``UNANCHORED`` (not ``PASS``, whatever else passed), with keys a missing head fails.
* ``verify_head``: one signed head against public keys.
* ``verify_consistency(old_head, new_head, proof, keys)``: the RFC 9162 consistency proof
  that the newer head's log extends the older one's (and, with keys, both signatures).
* ``verify_note``: a C2SP checkpoint note (``store/notes.py``) against verifier keys: the
  note's form, its signature as ``note.Open`` checks it, the checkpoint it states.
* ``audit_log``: a store's whole log (``pokdeng checkpoints audit``): every leaf recomputed
  and matched with its round's stored last digest, every head's root recomputed from the
  leaves, every signature checked, and every head's note: the checkpoint of that head, under
  one origin, signed by the head's key.

docs/checkpoints.md describes the formats.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.store import merkle
from pokdeng_service.store.notes import Checkpoint, NoteError, Verifier, open_note
from pokdeng_service.store.signing import PublicKeys, SigningError, TreeHead

if TYPE_CHECKING:  # (the store's log is read by audit_log alone: a bundle's anchor is checked without the library)
    from uuid import UUID

    from eventsourcing.persistence import AggregateRecorder, Mapper

    from pokdeng_service.store.facts import RecordedEvent
    from pokdeng_service.store.roundlog import LogRecord

UNANCHORED = "unanchored"


def _head_text(head: TreeHead) -> str:
    return f"log {head.log_id}, size {head.tree_size}, at {head.time}"


def check_anchor(
    verdict: Verdict, round_id: str, last_digest: str, anchor: dict[str, Any] | None, keys: PublicKeys | None
) -> None:
    """The round (its id and last chain digest) under the signed head of ``anchor`` (a bundle's ``log``)."""
    if anchor is None:
        detail = f"{UNANCHORED}: no signed tree head covers this round (export it again after SignTreeHead)"
        if keys:
            verdict.add("anchor", False, detail)
        else:
            verdict.leave_unanchored(detail)
        return
    head = TreeHead.from_dict(anchor["head"])
    index = anchor["index"]
    leaf = merkle.leaf_hash(round_id, last_digest)
    path = [bytes.fromhex(h) for h in anchor["path"]]
    if type(index) is not int:
        raise ValueError("the anchor's index is not an integer")
    proven = leaf.hex() == anchor["leaf"] and merkle.verify_inclusion(
        leaf, index, head.tree_size, path, bytes.fromhex(head.root_hash)
    )
    detail = (
        f"leaf {index} of {head.tree_size} under the head's root"
        if proven
        else ("the round's leaf (its id and last digest) is not under the head's root")
    )
    verdict.add("log inclusion", proven, detail)
    if not keys:
        verdict.leave_unanchored(
            f"{UNANCHORED}: the signed tree head ({_head_text(head)}, key {head.key_id}) was not checked: "
            "give the operator's public key (--key)"
        )
        return
    ok, why = keys.check(head)
    verdict.add("anchor", ok, f"{why}: {_head_text(head)}" if ok else why)


def verify_head(head: TreeHead | dict[str, Any], keys: PublicKeys) -> Verdict:
    """One signed tree head against public keys."""
    verdict = Verdict("signed tree head")
    try:
        parsed = head if isinstance(head, TreeHead) else TreeHead.from_dict(head)
    except SigningError as error:
        verdict.add("form", False, str(error))
        return verdict
    verdict.subject = f"signed tree head of {_head_text(parsed)}"
    verdict.add("signature", *keys.check(parsed))
    return verdict


def verify_consistency(
    old_head: TreeHead | dict[str, Any],
    new_head: TreeHead | dict[str, Any],
    proof: Sequence[str] | dict[str, Any],
    keys: PublicKeys | None = None,
) -> Verdict:
    """Whether ``new_head``'s log extends ``old_head``'s: the same log, a size no smaller, and the RFC 9162
    consistency proof (``proof``: its hashes in hex, or the ``{first, second, path}`` of
    ``consistency_proof``). With ``keys``, both heads' signatures too."""
    verdict = Verdict("consistency")
    try:
        old = old_head if isinstance(old_head, TreeHead) else TreeHead.from_dict(old_head)
        new = new_head if isinstance(new_head, TreeHead) else TreeHead.from_dict(new_head)
        if isinstance(proof, dict):
            if (proof.get("first"), proof.get("second")) != (old.tree_size, new.tree_size):
                verdict.add("sizes", False, "the proof is for other tree sizes than the heads'")
                return verdict
            proof = proof["path"]
        path = [bytes.fromhex(h) for h in proof]
        old_root, new_root = bytes.fromhex(old.root_hash), bytes.fromhex(new.root_hash)
    except (SigningError, KeyError, TypeError, ValueError) as error:
        verdict.add("form", False, f"missing or malformed field: {error}")
        return verdict
    verdict.subject = f"consistency of log {new.log_id} from size {old.tree_size} to {new.tree_size}"
    verdict.add("log", old.log_id == new.log_id, f"both heads are of log {old.log_id}")
    verdict.add("sizes", old.tree_size <= new.tree_size, f"{old.tree_size} <= {new.tree_size}")
    consistent = merkle.verify_consistency(old.tree_size, new.tree_size, old_root, new_root, path)
    verdict.add("consistency", consistent, f"RFC 9162 proof of {len(path)} hashes")
    if keys:
        for name, head in (("old head", old), ("new head", new)):
            verdict.add(name, *keys.check(head))
    else:
        verdict.warn(f"{UNANCHORED}: the heads' signatures were not checked (no public key given)")
    return verdict


def verify_note(raw: str | bytes, verifiers: Sequence[Verifier], origin: str = "") -> Verdict:
    """A checkpoint note against verifier keys: signed by one of them (as ``note.Open`` checks: unknown keys'
    signatures ignored, a known key's failing signature fails the note), by the log's key (a verified signature
    whose key name is the checkpoint's origin), and a well-formed checkpoint; ``origin``: the origin it must
    name."""
    verdict = Verdict("checkpoint note")
    try:
        opened = open_note(raw, verifiers)
    except NoteError as error:
        verdict.add("signature", False, str(error))
        return verdict
    names = ", ".join(f"{s.name}+{s.key_hash:08x}" for s in opened.verified)
    verdict.add("signature", True, f"Ed25519 signature of {names}")
    try:
        checkpoint = Checkpoint.parse(opened.text)
    except NoteError as error:
        verdict.add("checkpoint", False, str(error))
        return verdict
    verdict.subject = f"checkpoint of {checkpoint.origin}, size {checkpoint.size}"
    verdict.add("checkpoint", True, f"size {checkpoint.size}, root {checkpoint.root.hex()}")
    by_log = any(s.name == checkpoint.origin for s in opened.verified)
    verdict.add("log signature", by_log, f"signed under the origin's name {checkpoint.origin}")
    if origin:
        verdict.add("origin", checkpoint.origin == origin, f"the note names {checkpoint.origin}, expected {origin}")
    if opened.unverified:
        others = ", ".join(f"{s.name}+{s.key_hash:08x}" for s in opened.unverified)
        verdict.warn(f"signatures by keys not given were not checked: {others}")
    return verdict


def _note_problem(head: TreeHead, note: str, origin: str, keys: PublicKeys | None) -> str:
    """What is wrong with a head's stored note, or "": it is the checkpoint of that head, under the log's origin,
    signed (with ``keys``) by the head's key under the origin's name."""
    try:
        checkpoint = Checkpoint.parse(note[: note.rfind("\n\n") + 1])
    except NoteError as error:
        return f"the note of the head of size {head.tree_size} is malformed: {error}"
    if checkpoint.origin != origin:
        return f"the note of the head of size {head.tree_size} names {checkpoint.origin}, not the log's {origin}"
    if (checkpoint.size, checkpoint.root.hex()) != (head.tree_size, head.root_hash):
        return f"the note of the head of size {head.tree_size} is not that head's size and root"
    if keys is not None:
        if head.key_id not in keys:
            return f"the note of the head of size {head.tree_size}: its key {head.key_id} was not given"
        try:
            open_note(note, [Verifier(origin, bytes.fromhex(keys.hex(head.key_id)))])
        except NoteError as error:
            return f"the note of the head of size {head.tree_size}: {error}"
    return ""


def _audit_notes(verdict: Verdict, log_id: str, heads: list[tuple[int, TreeHead]], notes: dict[int, str],
                 keys: PublicKeys | None) -> None:  # fmt: skip
    noted = [(head, notes[p]) for p, head in heads if p in notes]
    if not noted:
        verdict.warn("no head has a checkpoint note (heads signed before notes were)")
        return
    origin = noted[0][1].split("\n", 1)[0]
    problem = "" if origin.endswith("/" + log_id) else f"the notes' origin {origin} does not end with /{log_id}"
    for head, note in noted:
        problem = problem or _note_problem(head, note, origin, keys)
    signed = ", each signed by its head's key" if keys else ""
    verdict.add("notes", not problem, problem or f"{len(noted)} checkpoint notes of origin {origin}{signed}")


class LogAudited(Protocol):
    """What ``audit_log`` reads of an application: the log's events and the rounds' stored rows."""

    @property
    def recorder(self) -> AggregateRecorder: ...

    @property
    def mapper(self) -> Mapper[UUID]: ...

    def log_events(self) -> list[RecordedEvent]: ...


def _last_digest(app: LogAudited, round_id: str) -> str | None:
    from pokdeng_service.store.aggregates import round_uuid
    from pokdeng_service.store.fastpaths import facts_of_rows

    rows = app.recorder.select_events(round_uuid(round_id), desc=True, limit=1)
    facts = facts_of_rows(app.mapper, rows)
    return facts[0].digest if facts else None


def audit_log(app: LogAudited, keys: PublicKeys | None = None, subject: str = "") -> Verdict:
    """The store's log: leaves, their rounds, every head's root and signature (names the first problem)."""
    from pokdeng_service.store.roundlog import read_log

    log = read_log(app.log_events())
    verdict = Verdict(subject or f"log {log.log_id or '(none)'}")
    if not log.log_id:
        verdict.add("log", not log.leaves and not log.heads, "no round has closed in this store yet")
        return verdict
    bad_leaf, bad_round = _leaves_problems(app, log)
    verdict.add("leaves", not bad_leaf, bad_leaf or f"{len(log.leaves)} leaves, each its round's hash, in order")
    verdict.add("rounds", not bad_round, bad_round or "every logged round is stored with the digest logged")
    bad_head = _heads_problem(log)
    verdict.add("heads", not bad_head, bad_head or f"{len(log.heads)} signed heads, each the root of its leaves")
    _audit_notes(verdict, log.log_id, log.heads, log.notes, keys)
    _check_signatures(verdict, log, keys)
    return verdict


def _leaves_problems(app: LogAudited, log: LogRecord) -> tuple[str, str]:
    """The first problem of the leaves (each its round's hash, each round once) and of their rounds (each stored,
    with the last digest logged); "" for none."""
    from pokdeng_service.store.roundlog import leaf_problem

    seen: set[str] = set()
    bad_leaf = bad_round = ""
    for i, leaf in enumerate(log.leaves):
        if not bad_leaf:
            bad_leaf = leaf_problem(i, leaf) or (
                f"leaf {i}: round {leaf.round_id} is in the log twice" if leaf.round_id in seen else ""
            )
        seen.add(leaf.round_id)
        if not bad_round:
            stored = _last_digest(app, leaf.round_id)
            if stored is None:
                bad_round = f"leaf {i}: round {leaf.round_id} is not in the store"
            elif stored != leaf.digest:
                bad_round = f"leaf {i}: round {leaf.round_id}'s stored last digest is not the one logged"
    return bad_leaf, bad_round


def _heads_problem(log: LogRecord) -> str:
    """The first head that is not of the log, covers more leaves than it has, shrinks, or is not their root."""
    from pokdeng_service.store.roundlog import covers

    hashes = log.hashes
    previous = 0
    for position, head in log.heads:
        if head.log_id != log.log_id:
            return f"the head at position {position} is of log {head.log_id}"
        if head.tree_size > len(hashes):
            return f"the head at position {position} covers {head.tree_size} leaves; the log has {len(hashes)}"
        if head.tree_size < previous:
            return f"the head at position {position} is smaller ({head.tree_size}) than the one before"
        if not covers(head, hashes):
            return f"the head at position {position} (size {head.tree_size}) is not the root of the log's leaves"
        previous = head.tree_size
    return ""


def _check_signatures(verdict: Verdict, log: LogRecord, keys: PublicKeys | None) -> None:
    """Every head's signature under ``keys``; without heads or keys, nothing vouches for the log (UNANCHORED:
    a failure with keys and no head, else a warning)."""
    if not log.heads:
        detail = f"{UNANCHORED}: the log holds no signed tree head (none signed yet, or deleted: see the published)"
        if keys:
            verdict.add("signatures", False, detail)
        else:
            verdict.warn(detail)
        return
    if not keys:
        verdict.warn(f"{UNANCHORED}: the heads' signatures were not checked (no public key given)")
        return
    bad_signature = next((why for _p, head in log.heads for ok, why in [keys.check(head)] if not ok), "")
    verdict.add("signatures", not bad_signature, bad_signature or f"{len(log.heads)} heads, each signature verified")
