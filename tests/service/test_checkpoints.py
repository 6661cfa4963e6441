"""Signed, append-only checkpoints (docs/checkpoints.md): the store's log of closed rounds, signed
tree heads, RFC 9162 inclusion and consistency proofs, and bundles anchored by them.

The proofs are checked against an independent RFC 9162 implementation written here from the
RFC's algorithm text (sections 2.1.1, 2.1.3 and 2.1.4), not from ``store/merkle.py``.
Tampering is done as an insider would: on the stored rows, or on an exported bundle with every
digest recomputed.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import random
import sqlite3
import struct
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from pokdeng_core.errors import DomainError
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.audit.anchors import audit_log, verify_consistency, verify_head
from pokdeng_service.store import merkle
from pokdeng_service.store.codec import canonical_json, chain_digest, genesis_digest
from pokdeng_service.store.roundlog import ROUND_LOG_UUID
from pokdeng_service.store.signing import KeyRing, PublicKeys, SigningKey, TreeHead

from . import play

# --- RFC 9162, from the algorithm text ---------------------------------------------------------


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _k(n: int) -> int:
    """The largest power of two smaller than n (n > 1)."""
    k = 1
    while k << 1 < n:
        k <<= 1
    return k


def rfc_mth(d: Sequence[bytes]) -> bytes:
    """MTH(D[n]) of section 2.1.1 over the entries D (leaf inputs, not hashes)."""
    n = len(d)
    if n == 0:
        return _h(b"")
    if n == 1:
        return _h(b"\x00" + d[0])
    k = _k(n)
    return _h(b"\x01" + rfc_mth(d[:k]) + rfc_mth(d[k:]))


def rfc_path(m: int, d: Sequence[bytes]) -> list[bytes]:
    """PATH(m, D[n]) of section 2.1.3.1."""
    n = len(d)
    if n == 1:
        return []
    k = _k(n)
    if m < k:
        return [*rfc_path(m, d[:k]), rfc_mth(d[k:])]
    return [*rfc_path(m - k, d[k:]), rfc_mth(d[:k])]


def rfc_proof(m: int, d: Sequence[bytes]) -> list[bytes]:
    """PROOF(m, D[n]) of section 2.1.4.1 (0 < m < n)."""

    def subproof(m: int, d: Sequence[bytes], b: bool) -> list[bytes]:
        n = len(d)
        if m == n:
            return [] if b else [rfc_mth(d)]
        k = _k(n)
        if m <= k:
            return [*subproof(m, d[:k], b), rfc_mth(d[k:])]
        return [*subproof(m - k, d[k:], False), rfc_mth(d[:k])]

    return subproof(m, d, True)


def rfc_verify_inclusion(leaf_index: int, tree_size: int, leaf: bytes, path: Sequence[bytes], root: bytes) -> bool:
    """Section 2.1.3.2, step by step; ``leaf`` is the leaf's hash."""
    if leaf_index >= tree_size:
        return False
    fn, sn = leaf_index, tree_size - 1
    r = leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = _h(b"\x01" + p + r)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            r = _h(b"\x01" + r + p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def rfc_verify_consistency(
    first: int, second: int, first_hash: bytes, second_hash: bytes, path: Sequence[bytes]
) -> bool:
    """Section 2.1.4.2, step by step (0 < first < second)."""
    if not path:
        return False
    path = list(path)
    if first & (first - 1) == 0:
        path = [first_hash, *path]
    fn, sn = first - 1, second - 1
    if fn & 1:
        while fn & 1:
            fn >>= 1
            sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = _h(b"\x01" + c + fr)
            sr = _h(b"\x01" + c + sr)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            sr = _h(b"\x01" + sr + c)
        fn >>= 1
        sn >>= 1
    return fr == first_hash and sr == second_hash and sn == 0


def _entries(n: int, salt: int) -> list[bytes]:
    """n distinct leaf inputs shaped like the log's (round id, 0x00, a 32-byte digest)."""
    return [f"t{salt}#{i}".encode() + b"\x00" + _h(f"{salt}:{i}".encode()) for i in range(n)]


def _hashes(entries: Sequence[bytes]) -> list[bytes]:
    return [_h(b"\x00" + e) for e in entries]


def _flip(proof: list[bytes], which: int, bit: int) -> list[bytes]:
    out = list(proof)
    node = bytearray(out[which])
    node[bit // 8 % 32] ^= 1 << (bit % 8)
    out[which] = bytes(node)
    return out


# A tree of up to 300 leaves, with a few larger ones; a salt so that the leaves differ between examples.
sizes = st.one_of(st.integers(1, 70), st.integers(70, 300), st.sampled_from([511, 512, 513, 1000, 1024, 1025]))


def test_the_leaf_is_the_documented_hash() -> None:
    digest = _h(b"x").hex()
    expected = _h(b"\x00" + b"t#7" + b"\x00" + bytes.fromhex(digest))
    assert merkle.leaf_hash("t#7", digest) == expected == _hashes([b"t#7\x00" + bytes.fromhex(digest)])[0]
    assert merkle.root([]) == merkle.EMPTY_ROOT == rfc_mth([])


@settings(max_examples=150, deadline=None)
@given(n=sizes, salt=st.integers(0, 10**6), data=st.data())
def test_roots_and_inclusion_proofs_are_rfc_9162(n: int, salt: int, data: st.DataObject) -> None:
    entries = _entries(n, salt)
    hashes = _hashes(entries)
    root = rfc_mth(entries)
    assert merkle.root(hashes) == root
    frontier: list[bytes] = []
    for i, leaf in enumerate(hashes):  # the log's running root, leaf by leaf
        frontier = merkle.frontier_append(i, frontier, leaf)
    assert merkle.frontier_root(frontier) == root and len(frontier) == bin(n).count("1")
    for index in {0, n - 1, data.draw(st.integers(0, n - 1))}:
        proof = merkle.inclusion_proof(hashes, index)
        assert proof == rfc_path(index, entries)
        assert merkle.verify_inclusion(hashes[index], index, n, proof, root)
        assert rfc_verify_inclusion(index, n, hashes[index], proof, root)
        if proof:  # any bit of any node changed: both refuse
            bad = _flip(proof, data.draw(st.integers(0, len(proof) - 1)), data.draw(st.integers(0, 255)))
            assert not merkle.verify_inclusion(hashes[index], index, n, bad, root)
            assert not rfc_verify_inclusion(index, n, hashes[index], bad, root)
        other = data.draw(st.integers(0, n - 1))
        if other != index:  # another leaf, or the right leaf at another index
            assert not merkle.verify_inclusion(hashes[other], index, n, proof, root)
            assert not merkle.verify_inclusion(hashes[index], other, n, proof, root)
        for size in {n - 1, n + 1, data.draw(st.integers(1, 2 * n + 1))} - {n, 0}:  # the verifiers agree
            assert merkle.verify_inclusion(hashes[index], index, size, proof, root) == rfc_verify_inclusion(
                index, size, hashes[index], proof, root
            )
        assert not merkle.verify_inclusion(hashes[index], index, n, [*proof, root], root)
        assert not rfc_verify_inclusion(index, n, hashes[index], [*proof, root], root)


@settings(max_examples=150, deadline=None)
@given(n=sizes, salt=st.integers(0, 10**6), data=st.data())
def test_consistency_proofs_are_rfc_9162(n: int, salt: int, data: st.DataObject) -> None:
    entries = _entries(n, salt)
    hashes = _hashes(entries)
    new_root = rfc_mth(entries)
    for m in {1, n - 1, n // 2, data.draw(st.integers(1, n))} - {0}:
        old_root = rfc_mth(entries[:m])
        proof = merkle.consistency_proof(hashes, m)
        if m == n:
            assert proof == [] and merkle.verify_consistency(m, n, old_root, new_root, proof)
            continue
        assert proof == rfc_proof(m, entries)
        assert merkle.verify_consistency(m, n, old_root, new_root, proof)
        assert rfc_verify_consistency(m, n, old_root, new_root, proof)
        bad = _flip(proof, data.draw(st.integers(0, len(proof) - 1)), data.draw(st.integers(0, 255)))
        assert not merkle.verify_consistency(m, n, old_root, new_root, bad)
        assert not rfc_verify_consistency(m, n, old_root, new_root, bad)
        assert not merkle.verify_consistency(m, n, _h(b"other"), new_root, proof)
        assert not merkle.verify_consistency(m, n, old_root, _h(b"other"), proof)
        assert not merkle.verify_consistency(m, n, old_root, new_root, proof[:-1])
        assert not merkle.verify_consistency(m, n, old_root, new_root, [*proof, new_root])
        assert not merkle.verify_consistency(n, m, new_root, old_root, proof)  # the log never shrinks
        for first, second in {(m, n + 1), (m + 1, n), (max(1, m - 1), n)} - {(m, n)}:  # the verifiers agree
            if 0 < first < second:
                assert merkle.verify_consistency(first, second, old_root, new_root, proof) == rfc_verify_consistency(
                    first, second, old_root, new_root, proof
                )
        changed = list(entries)  # one earlier leaf rewritten: no proof from the old root holds
        changed[data.draw(st.integers(0, m - 1))] += b"!"
        rewritten = _hashes(changed)
        assert not merkle.verify_consistency(m, n, old_root, rfc_mth(changed), merkle.consistency_proof(rewritten, m))
    with pytest.raises(ValueError, match="empty tree"):  # RFC 9162 defines no proof from the empty tree
        merkle.consistency_proof(hashes, 0)
    assert not merkle.verify_consistency(0, n, merkle.EMPTY_ROOT, new_root, [])
    assert not merkle.verify_consistency(0, 0, merkle.EMPTY_ROOT, merkle.EMPTY_ROOT, [])


# --- signed tree heads ------------------------------------------------------------------------------

KEY = SigningKey.from_hex("11" * 32)
OTHER = SigningKey.from_hex("22" * 32)


def test_the_signed_bytes_are_exactly_the_documented_ones() -> None:
    root = _h(b"root")
    head = KEY.sign("pokdeng-0123456789abcdef", 42, root, 1_700_000_000_123)
    log_id, key_id = b"pokdeng-0123456789abcdef", KEY.key_id.encode()
    expected = (
        b"pokdeng-tree-head-v1\x00"
        + bytes([len(log_id)])
        + log_id
        + bytes([len(key_id)])
        + key_id
        + struct.pack(">Q", 1_700_000_000_123)
        + struct.pack(">Q", 42)
        + b"\x20"
        + root
    )
    assert head.signed_bytes() == expected
    assert KEY.key_id == hashlib.sha256(KEY.public).digest()[:8].hex()
    Ed25519PublicKey.from_public_bytes(KEY.public).verify(bytes.fromhex(head.signature), expected)  # raises if not
    assert head.as_dict() == {
        "format": "pokdeng-signed-tree-head",
        "format_version": 1,
        "log_id": "pokdeng-0123456789abcdef",
        "key_id": KEY.key_id,
        "tree_size": 42,
        "root_hash": root.hex(),
        "timestamp": 1_700_000_000_123,
        "signature": head.signature,
    }
    assert TreeHead.from_dict(json.loads(json.dumps(head.as_dict()))) == head


def test_a_signed_head_verifies_with_its_key_only_and_not_once_any_field_changes() -> None:
    head = KEY.sign("pokdeng-log", 9, _h(b"r"), 1_000)
    keys = PublicKeys([KEY.public])
    assert keys.check(head)[0] and verify_head(head, keys).ok
    assert not PublicKeys([OTHER.public]).check(head)[0]  # another key: not among the keys given
    forged_id = TreeHead(head.log_id, OTHER.key_id, head.tree_size, head.root_hash, head.timestamp, head.signature)
    assert not PublicKeys([KEY.public, OTHER.public]).check(forged_id)[0]  # claims the other key: does not verify
    changes: dict[str, Any] = {
        "log_id": "pokdeng-other",
        "key_id": "00" * 8,
        "tree_size": 10,
        "root_hash": _h(b"s").hex(),
        "timestamp": 1_001,
        "signature": OTHER.sign("pokdeng-log", 9, _h(b"r"), 1_000).signature,
    }
    for name, value in changes.items():
        changed = TreeHead(**{**_fields(head), name: value})
        assert not keys.check(changed)[0], name
        assert not verify_head(changed.as_dict(), keys).ok, name
    flipped = bytearray.fromhex(head.signature)
    flipped[5] ^= 1
    assert not keys.check(TreeHead(**{**_fields(head), "signature": flipped.hex()}))[0]


def _fields(head: TreeHead) -> dict[str, Any]:
    return {k: v for k, v in head.as_dict().items() if k not in ("format", "format_version")}


def test_rotation_keeps_old_heads_verifiable(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    ring = KeyRing()
    first = ring.rotate()
    ring.save(path, new=True)
    assert path.stat().st_mode & 0o777 == 0o600
    old_head = first.sign("pokdeng-log", 3, _h(b"a"), 1)
    ring = KeyRing.from_file(path)
    second = ring.rotate()
    ring.save(path)
    ring = KeyRing.from_file(path)
    assert ring.current == second and set(ring.public) == {first.key_id, second.key_id}
    assert "private_key" not in next(e for e in ring.entries if e["key_id"] == first.key_id)
    new_head = ring.current.sign("pokdeng-log", 5, _h(b"b"), 2)
    published = PublicKeys.parse("\n".join(ring.describe()))  # what `pokdeng keys show` prints
    assert published.check(old_head)[0] and published.check(new_head)[0]
    assert not PublicKeys([second.public]).check(old_head)[0]
    with pytest.raises(ValueError, match="exists already"):
        KeyRing.of(OTHER).save(path, new=True)


# --- the store's log -------------------------------------------------------------------------------


def _play(d: play.Driver, table: str, rounds: int, stake: int = 200) -> list[str]:
    ids = []
    for n in range(rounds):
        round_id = play.start_round(d, table, f"client-{n}")
        play.seat_bets(d, round_id, stake)
        play.drive_round(d, round_id)
        ids.append(round_id)
    return ids


def _setup(d: play.Driver, table: str = "t", profile: str = "classic") -> None:
    names = [f"{table}-p1", f"{table}-p2"]
    play.open_wallets(d, names)
    play.open_table(d, table, profile, [(1, names[0]), (2, names[1])])


def _keys() -> PublicKeys:
    return play.signing_keys().public


@pytest.mark.each_store
def test_every_closed_round_is_logged_in_the_transaction_that_closes_it(app: PokdengApp, driver: play.Driver) -> None:
    _setup(driver, "a")
    _setup(driver, "b", "kingmaker")
    closed = _play(driver, "a", 2) + _play(driver, "b", 2)
    voided = play.start_round(driver, "a", "void me")
    play.seat_bets(driver, voided, 100)
    driver.call("void_round", voided, "a test void")
    closed.append(voided)
    log = app.read_log()
    assert [leaf.round_id for leaf in log.leaves] == closed
    assert [leaf.logged_index for leaf in log.leaves] == list(range(len(closed)))
    pins = {r: d for t in ("a", "b") for _n, r, d in app.finished_rounds(t)}
    assert all(leaf.digest == pins[leaf.round_id] == app.round_events(leaf.round_id)[-1].digest for leaf in log.leaves)
    notes = app.read_notifications(0, 10_000)
    for i, note in enumerate(notes):  # saved with the table's round_finished, in one transaction
        if note.kind == "LeafAppended":
            before = notes[i - 2] if notes[i - 1].kind == "Started" else notes[i - 1]  # (the log's creation)
            assert before.kind == "round_finished" and before.data["round_id"] == note.data["round_id"]
            assert note.stream == "log"
    round_log = app.load_round_log()
    assert round_log is not None and round_log.size == len(closed)
    assert audit_log(app, _keys()).checks[-1].name == "signatures"  # no head yet: unanchored, with keys a failure
    assert not audit_log(app, _keys()).ok and "unanchored" in audit_log(app).render()


def test_sign_tree_head_needs_a_key_and_a_closed_round(make_app: Callable[..., PokdengApp]) -> None:
    app = make_app()
    d = play.Driver(app)
    with pytest.raises(Exception, match="no round has closed"):
        d.call("sign_tree_head")
    _setup(d)
    _play(d, "t", 1)
    keyless = PokdengApp(app.env, vault=play.vault())
    try:
        with pytest.raises(Exception, match="no signing key"):
            keyless.sign_tree_head("sign-1")
    finally:
        keyless.close()
    head = d.call("sign_tree_head").events[-1]
    assert head.kind == "HeadSigned" and head.data["tree_size"] == 1


def test_successive_heads_are_consistent(app: PokdengApp, driver: play.Driver) -> None:
    _setup(driver)
    heads = []
    for batch in (3, 2, 0, 4):
        _play(driver, "t", batch)
        driver.call("sign_tree_head")
        heads.append(app.tree_head())
    assert [h.tree_size for h in heads] == [3, 5, 5, 9]
    keys = _keys()
    for old, new in itertools.pairwise(heads):
        proof = app.consistency_proof(old.tree_size, new.tree_size)
        verdict = verify_consistency(old.as_dict(), new.as_dict(), proof, keys)
        assert verdict.ok, verdict.render()
        assert (
            rfc_verify_consistency(
                old.tree_size,
                new.tree_size,
                bytes.fromhex(old.root_hash),
                bytes.fromhex(new.root_hash),
                [bytes.fromhex(h) for h in proof["path"]],
            )
            or old.tree_size == new.tree_size
        )
    assert not verify_consistency(heads[0], heads[-1], app.consistency_proof(2, 9), keys).ok  # sizes differ
    assert app.tree_head(5) == heads[2] and audit_log(app, keys).ok, audit_log(app, keys).render()


def test_an_anchored_bundle_verifies_offline_with_the_key(app: PokdengApp, driver: play.Driver) -> None:
    _setup(driver, "t", "kingmaker")
    rounds = _play(driver, "t", 5)
    before = audit.bundle_bytes(audit.export_bundle(app, rounds[0]))
    driver.call("sign_tree_head")
    later = _play(driver, "t", 1)
    for round_id in rounds:
        bundle = audit.export_bundle(app, round_id)
        assert bundle["log"]["head"]["tree_size"] == 5
        raw = audit.bundle_bytes(bundle)
        verdict = audit.verify_bundle(raw, keys=_keys())
        assert verdict.ok and not verdict.warnings, verdict.render()
        assert [c.name for c in verdict.checks][-2:] == ["log inclusion", "anchor"]
        unkeyed = audit.verify_bundle(raw)
        assert unkeyed.ok and any(w.startswith("unanchored") for w in unkeyed.warnings), unkeyed.render()
        wrong = audit.verify_bundle(raw, keys=PublicKeys([OTHER.public]))
        assert not wrong.ok and wrong.first_difference.startswith("anchor"), wrong.render()
    for raw in (before, audit.bundle_bytes(audit.export_bundle(app, later[0]))):  # exported before / not yet covered
        assert json.loads(raw)["log"] is None
        unkeyed = audit.verify_bundle(raw)
        assert unkeyed.ok and "WARN unanchored" in unkeyed.render()
        keyed = audit.verify_bundle(raw, keys=_keys())
        assert not keyed.ok and keyed.first_difference.startswith("anchor: unanchored"), keyed.render()


def _redigest(bundle: dict[str, Any]) -> bytes:
    """What a careful forger does after an edit: every chain digest, the chain end and the bundle digest again."""
    previous = genesis_digest(bundle["round_id"])
    for event in bundle["events"]:
        if event["digest"]:
            event["digest"] = previous = chain_digest(
                previous, event["kind"], event["data"], event["position"], event["command_id"], event["timestamp"]
            )
    bundle["chain"]["last"] = previous
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    bundle["bundle_digest"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    return audit.bundle_bytes(bundle)


def test_a_payout_edited_with_every_digest_recomputed_no_longer_matches_the_signed_root(
    app: PokdengApp, driver: play.Driver
) -> None:
    _setup(driver)
    round_id = _play(driver, "t", 3)[1]
    driver.call("sign_tree_head")
    bundle = audit.export_bundle(app, round_id)
    forged = copy.deepcopy(bundle)
    settled = next(e for e in forged["events"] if e["kind"] == "bet_settled")
    settled["data"]["net"] += 100
    forged["payouts"] = [e["data"] for e in forged["events"] if e["kind"] == "bet_settled"]
    raw = _redigest(forged)
    for keys in (_keys(), None):
        verdict = audit.verify_bundle(raw, keys=keys)
        assert not verdict.ok
        assert next(c for c in verdict.checks if c.name == "log inclusion").ok is False, verdict.render()
        assert all(c.ok for c in verdict.checks if c.name in ("form", "bundle digest", "chain", "chain end"))


def test_a_consistently_replayed_forgery_passes_everything_but_the_anchor(
    make_app: Callable[..., PokdengApp], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The forger re-plays the round with another stake from the same revealed seed, so every
    digest, the replay and the money agree: only the signed root tells."""
    from pokdeng_service.application import rounds

    monkeypatch.setattr(rounds, "fresh_seed", lambda: b"\x07" * 32)
    for attempt in range(10):
        genuine_app = make_app()
        forger_app = PokdengApp(
            {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / f"forger{attempt}.sqlite")},
            vault=play.vault(),
        )
        try:
            genuine = play.Driver(genuine_app, chooser=play.Chooser(random.Random(attempt)))
            forger = play.Driver(forger_app, chooser=play.Chooser(random.Random(attempt)))
            _setup(genuine, f"f{attempt}")
            _setup(forger, f"f{attempt}")
            (round_id,) = _play(genuine, f"f{attempt}", 1, stake=200)
            assert _play(forger, f"f{attempt}", 1, stake=600) == [round_id]
            genuine.call("sign_tree_head")
            real = audit.export_bundle(genuine_app, round_id)
            fake = audit.export_bundle(forger_app, round_id)
        finally:
            forger_app.close()
        if real["payouts"] != fake["payouts"]:
            break
    else:  # pragma: no cover - ten pushes in a row: a payout that changes nothing proves nothing
        raise AssertionError("ten attempts in a row ended in a push: no payout to rewrite")
    alone = audit.verify_bundle(audit.bundle_bytes(fake))
    assert alone.ok and "unanchored" in alone.render(), alone.render()  # what an unanchored bundle cannot rule out
    fake["log"] = real["log"]  # the genuine signed head and proof, carried over
    body = {k: v for k, v in fake.items() if k != "bundle_digest"}
    fake["bundle_digest"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    verdict = audit.verify_bundle(audit.bundle_bytes(fake), keys=_keys())
    assert [c.name for c in verdict.checks if not c.ok] == ["log inclusion"], verdict.render()


# --- deleting a closed round from the store ----------------------------------------------------------


SqliteStore = tuple[Callable[..., PokdengApp], dict[str, str]]


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    """Apps on one SQLite file (whose rows the tests edit directly), and its settings."""
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "pokdeng.sqlite")}
    apps: list[PokdengApp] = []

    def factory(**extra: str) -> PokdengApp:
        apps.append(play.make_app(env, **extra))
        return apps[-1]

    yield factory, env
    for app in reversed(apps):
        app.close()


def _sqlite(app_env: dict[str, str]) -> sqlite3.Connection:
    return sqlite3.connect(app_env["SQLITE_DBNAME"])


def _delete_round_everywhere(app_env: dict[str, str], round_id: str) -> None:
    """The round's stream and its leaf removed, and the later leaves renumbered, as a careful insider would."""
    from pokdeng_service.store.aggregates import round_uuid

    log = ROUND_LOG_UUID.hex
    with _sqlite(app_env) as conn:
        conn.execute("DELETE FROM stored_events WHERE originator_id = ?", (round_uuid(round_id).hex,))
        rows = conn.execute(
            "SELECT originator_version, topic, state FROM stored_events WHERE originator_id = ? "
            "ORDER BY originator_version",
            (log,),
        ).fetchall()
        victim = next(v for v, t, s in rows if t.endswith("LeafAppended") and json.loads(s)["round_id"] == round_id)
        conn.execute("DELETE FROM stored_events WHERE originator_id = ? AND originator_version = ?", (log, victim))
        for version, topic, state in rows:
            if version <= victim:
                continue
            data = json.loads(state)
            if topic.endswith("LeafAppended"):
                data["index"] -= 1
            conn.execute(
                "UPDATE stored_events SET originator_version = ?, state = ? WHERE originator_id = ? "
                "AND originator_version = ?",
                (version - 1, json.dumps(data).encode(), log, version),
            )
        conn.execute("DELETE FROM stored_snapshots WHERE originator_id = ?", (log,))


def test_deleting_a_closed_round_breaks_the_next_consistency_proof(sqlite_store: SqliteStore) -> None:
    make_app, app_env = sqlite_store
    app = make_app()
    d = play.Driver(app, chooser=play.Chooser(random.Random(4)))
    _setup(d)
    rounds = _play(d, "t", 6)
    d.call("sign_tree_head")
    published = app.tree_head()  # what the auditors hold
    _delete_round_everywhere(app_env, rounds[2])
    fresh = make_app(AGGREGATE_CACHE_MAXSIZE="")
    log = fresh.read_log()
    assert [leaf.round_id for leaf in log.leaves] == rounds[:2] + rounds[3:]  # a tidy log, one round short
    d2 = play.Driver(fresh, prefix="later", chooser=play.Chooser(random.Random(5)))
    _play(d2, "t", 2)
    # The server no longer signs on over the rewritten log (found from the outside: it used to, and only the
    # consistency proof against a head published before showed the rewrite): its last head is not the root
    # of the leaves it covered, and nothing is signed.
    with pytest.raises(DomainError, match=r"last signed head \(size 6\) is not the root"):
        d2.call("sign_tree_head")
    assert fresh.tree_head() == published
    audited = audit_log(fresh, _keys())
    assert not audited.ok and audited.first_difference.startswith("heads"), audited.render()
    new_log = fresh.read_log()  # (and the head published before is not the root of the log's first six leaves)
    assert published.tree_size == 6 and len(new_log.leaves) == 7
    assert merkle.root(new_log.hashes[:6]).hex() != published.root_hash


def test_a_round_deleted_under_its_leaf_is_named_by_the_log_audit(sqlite_store: SqliteStore) -> None:
    make_app, app_env = sqlite_store
    from pokdeng_service.store.aggregates import round_uuid

    app = make_app()
    d = play.Driver(app)
    _setup(d)
    rounds = _play(d, "t", 3)
    d.call("sign_tree_head")
    assert audit_log(app, _keys()).ok
    with _sqlite(app_env) as conn:
        conn.execute("DELETE FROM stored_events WHERE originator_id = ?", (round_uuid(rounds[1]).hex,))
    verdict = audit_log(make_app(AGGREGATE_CACHE_MAXSIZE=""), _keys())
    assert [c.name for c in verdict.checks if not c.ok] == ["rounds"], verdict.render()
    assert rounds[1] in verdict.first_difference
