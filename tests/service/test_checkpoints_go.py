"""Our checkpoints, proofs and verifier keys as Go's golang.org/x/mod/sumdb/note and sumdb/tlog read them.

``tests/go/checkpoints`` is a small Go program over the packages the C2SP formats come from: it opens
each note with ``note.Open`` (the verifier keys ``pokdeng checkpoints vkey`` prints), parses its
checkpoint, checks inclusion proofs with ``tlog.CheckRecord`` (the leaf hash being ``tlog.RecordHash``
of the round's entry, ``round id || 0x00 || last digest``: RFC 6962's leaf hash, so Go recomputes our
leaves itself) and consistency proofs with ``tlog.CheckTree``; it also makes the verifier key of each
public key (``note.NewEd25519VerifierKey``) and signs our note texts with our test key (``note.Sign``),
so that both are compared byte for byte with ours. Tampered notes and proofs must fail in Go too.

The build is offline: Go from Debian's ``golang-go``, and golang.org/x/mod from Debian's
``golang-golang-x-mod-dev`` (its sources under /usr/share/gocode, which the program's go.mod names in a
``replace``), with ``GOPROXY=off`` and ``GOFLAGS=-mod=readonly``. Without them the test is skipped,
except under ``CI=true``, where it fails (tests/needs.py; .ci/run installs both). Marked ``go`` (a kind of
``slow``: not in the fast loop).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pokdeng_service.application import PokdengApp
from pokdeng_service.store import merkle, notes
from pokdeng_service.store.notes import Verifier
from pokdeng_service.store.signing import SigningKey
from tests.needs import unavailable

from . import play

pytestmark = pytest.mark.go  # (and so slow: tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "go" / "checkpoints"
X_MOD = Path("/usr/share/gocode/src/golang.org/x/mod")  # Debian's golang-golang-x-mod-dev (go.mod's replace)


@pytest.fixture(scope="module")
def go_checker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go program, built offline into a temporary folder."""
    go = shutil.which("go")
    if go is None:
        unavailable("`go` not found on PATH: install Go (Debian: golang-go)")
    if not (X_MOD / "sumdb" / "note").is_dir() or not (X_MOD / "sumdb" / "tlog").is_dir():
        unavailable(f"golang.org/x/mod's sources are not in {X_MOD} (Debian: golang-golang-x-mod-dev)")
    work = tmp_path_factory.mktemp("go")
    env = {
        **os.environ,
        "GOPROXY": "off",
        "GOFLAGS": "-mod=readonly",
        "GOTOOLCHAIN": "local",
        "GO111MODULE": "on",
        "GOCACHE": str(work / "cache"),
        "GOPATH": str(work / "gopath"),
        "CGO_ENABLED": "0",
    }
    binary = work / "checkpoints"
    built = subprocess.run(
        [go, "build", "-o", str(binary), "."], cwd=PROGRAM, env=env, capture_output=True, text=True, timeout=300
    )
    assert built.returncode == 0, f"go build failed:\n{built.stdout}{built.stderr}"
    return binary


def _run(binary: Path, request: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [str(binary)], input=json.dumps(request), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert isinstance(answer, dict)
    return answer


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _play(driver: play.Driver, rounds: int) -> None:
    if not driver.app.read_log().log_id:
        play.open_wallets(driver, ["g-p1", "g-p2"])
        play.open_table(driver, "g", "kingmaker", [(1, "g-p1"), (2, "g-p2")])
    for k in range(rounds):
        round_id = play.start_round(driver, "g", f"go-{k}")
        play.seat_bets(driver, round_id, 100)
        play.drive_round(driver, round_id)


def _flip(hashes: list[str]) -> list[str]:
    raw = bytearray(base64.b64decode(hashes[0]))
    raw[5] ^= 0x10
    return [_b64(bytes(raw)), *hashes[1:]]


def test_go_reads_our_checkpoints_and_proofs(go_checker: Path, make_app: Callable[..., PokdengApp]) -> None:
    app = make_app(POKDENG_LOG_ORIGIN="casino.example/pokdeng")
    driver = play.Driver(app)
    for rounds in (3, 2, 4):  # heads of 3, 5 and 9 rounds, the last by a rotated key
        _play(driver, rounds)
        if rounds == 4:
            app.signing_keys.rotate()
        driver.call("sign_tree_head")
    log = app.read_log()
    heads = [head for _p, head in log.heads]
    signed = [log.notes[p] for p, _head in log.heads]
    origin = f"casino.example/pokdeng/{log.log_id}"
    publics = [bytes.fromhex(app.signing_keys.public.hex(key_id)) for key_id in app.signing_keys.public]
    vkeys = [str(Verifier(origin, public)) for public in publics]
    entries = [leaf.round_id.encode() + b"\x00" + bytes.fromhex(leaf.digest) for leaf in log.leaves]

    inclusion: list[dict[str, Any]] = []
    for n, head in enumerate(heads):
        hashes = log.hashes[: head.tree_size]
        for index in range(head.tree_size):
            path = [_b64(h) for h in merkle.inclusion_proof(hashes, index)]
            inclusion.append({"note": n, "entry": _b64(entries[index]), "index": index, "proof": path})
    consistency: list[dict[str, Any]] = []
    for old in range(len(heads)):
        for new in range(old, len(heads)):
            proof = app.consistency_proof(heads[old].tree_size, heads[new].tree_size)
            consistency.append({"old": old, "new": new, "proof": [_b64(bytes.fromhex(h)) for h in proof["path"]]})

    # what must fail in Go too
    forged = signed[0].replace(f"\n{heads[0].tree_size}\n", f"\n{heads[0].tree_size + 1}\n")
    other = notes.checkpoint_note(SigningKey.from_hex("22" * 32), origin, heads[0].tree_size, bytes(32))
    bad_notes = [forged, other, signed[0].replace("\n\n", "\n")]
    last = inclusion[-1]
    bad_inclusion = [
        {**last, "index": last["index"] - 1},  # the right leaf at another index
        {**inclusion[-2], "entry": last["entry"]},  # another round's entry at that index
        {**last, "proof": _flip(last["proof"])},  # a bit of the proof flipped
        {**last, "proof": last["proof"][:-1]},  # a node removed
        {**last, "note": 0},  # under a head that does not cover it (index 8 of 3 leaves)
    ]
    bad_consistency = [
        {**consistency[1], "proof": _flip(consistency[1]["proof"])},
        {"old": 2, "new": 0, "proof": consistency[1]["proof"]},  # the log shrinking
        {"old": 0, "new": 2, "proof": consistency[1]["proof"]},  # the proof of other sizes
    ]

    key = app.signing_keys.current
    assert key is not None
    skey = f"PRIVATE+KEY+{origin}+{notes.key_hash(origin, key.public):08x}+{_b64(bytes([1]) + key.seed)}"
    answer = _run(
        go_checker,
        {
            "vkeys": vkeys,
            "notes": signed + bad_notes,
            "inclusion": inclusion + bad_inclusion,
            "consistency": consistency + bad_consistency,
            "publicKeys": [{"name": origin, "key": _b64(public)} for public in publics],
            "sign": [{"skey": skey, "text": signed[-1].split("\n\n")[0] + "\n"}],
        },
    )

    opened = answer["notes"]
    for n, head in enumerate(heads):
        assert opened[n]["ok"], opened[n]
        assert opened[n]["checkpoint"] == {
            "origin": origin,
            "size": head.tree_size,
            "root": _b64(bytes.fromhex(head.root_hash)),
        }
        public = bytes.fromhex(app.signing_keys.public.hex(head.key_id))  # the key that signed this head
        assert opened[n]["signers"] == [f"{origin}+{notes.key_hash(origin, public):08x}"]
    assert [r["ok"] for r in opened[len(heads) :]] == [False] * len(bad_notes)
    assert "invalid signature" in opened[len(heads)]["error"]
    assert "no verifiable signatures" in opened[len(heads) + 1]["error"]
    assert "malformed" in opened[len(heads) + 2]["error"]
    assert len(inclusion) == 3 + 5 + 9
    assert [r["ok"] for r in answer["inclusion"]] == [True] * len(inclusion) + [False] * len(bad_inclusion)
    assert [r["ok"] for r in answer["consistency"]] == [True] * len(consistency) + [False] * len(bad_consistency)
    assert answer["vkeys"] == vkeys  # Go's verifier keys of our public keys are ours, byte for byte
    assert answer["signed"] == [signed[-1]]  # Go's note.Sign with our key writes our note, byte for byte
