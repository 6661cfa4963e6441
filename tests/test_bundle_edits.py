"""Every edit of a genuine bundle gets a verdict, and none passes: a property of `pokdeng verify` and of the docs'
verifier (docs/examples/worked_round.py), found missing by a verifier written from the docs alone (an edited seat
left `pokdeng verify` with no verdict at all; a malformed sender, `1e2` where an integer is documented, a wallet
dropped from an operator's export, passed).

The edits are a forger's, one at a time, anywhere in the file (docs/audit.md, "Verdicts and exit codes"):

* any value, a JSON leaf or a whole member, replaced by another value or another type (text of a grammar or
  not, an integer near it or beyond 2^53, a float, a boolean, null, an array, an object), a member or an element
  deleted, a member or an element added;
* then the bundle digest recomputed, and, for an edit of the events, perhaps also every chain digest
  (``rechain``) and every member the bundle restates from its events (``restate``): the bundle then says what
  its events say.

With the signing key (``--key``), every such bundle is FAIL: the events are anchored, and every other member is
recomputed from them, checked, or held by a proof (docs/audit.md, "What every member rests on"). Two edits
change nothing a check can see, and are the only ones let through: ``made_for`` relabelled as a recipient whose
balances are the same (``operator`` and ``auditor`` exports hold the same, a voided round's hold none for anyone:
which of them asked is the exporter's word), and ``inclusion`` made null (the table checkpoint's proof is
optional: removing it removes evidence and says nothing else). Without a key, nothing
anchors a bundle, so a consistent rewrite of the events may pass every check: the verdict is then UNANCHORED,
never PASS. And ``verify_bundle`` never raises, whatever the file holds.

The genuine bundles: the worked example, and bundles of kingmaker (side bets), room (a player banker, commissions),
ante and a voided round, and a settled and a voided room round on a platform's wallets (``platform_transactions``),
each made for the operator, an auditor and a player, under a signed tree head. Removing ``platform_transactions``
(evidence taken away, as its balances were already null) is let through like ``inclusion`` made null.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pokdeng_core.round_state import Phase
from pokdeng_service import audit
from pokdeng_service.audit.export import for_recipient
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.store import codec
from pokdeng_service.store.signing import PublicKeys, SigningKey

from . import forgery
from .cli.pages import worked_round
from .needs import unavailable
from .service import play

ROOT = Path(__file__).resolve().parents[1]
WORKED = ROOT / "docs" / "examples" / "worked_round.json"
WORKED_KEY = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"  # RFC 8032 test 1 (public)
EXAMPLES = 2000 if os.environ.get("POKDENG_TEST_LONG", "").strip().lower() in ("1", "true", "yes") else 200
"""Examples a property runs (``--long``: more). The profile (tests/conftest.py) decides the rest."""

Path_ = tuple[str | int, ...]


@pytest.fixture(scope="module")
def wr() -> ModuleType:
    return worked_round()


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, bytes, str]]:
    """(name, the bundle file, the public key that anchors it): every one passes with its key."""
    bundles = [("worked example", WORKED.read_bytes(), WORKED_KEY)]
    bundles += _platform_bundles(tmp_path_factory.mktemp("platform"))
    app = play.make_app({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    try:
        d = play.Driver(app, chooser=play.Chooser(random.Random(3), side_bet=1.0, timeout=0.2, reveal=0.5))
        rounds = dict(_rounds(d))
        d.call("checkpoint_table", "kingmaker-t", "shift 1")
        d.call("sign_tree_head")
        key = SigningKey.from_hex(play.SIGNING_KEY).public.hex()
        for name, round_id in rounds.items():
            bundle = audit.export_bundle(app, round_id)
            player = bundle["balances"][0]["wallet"] if bundle["balances"] else _seated(bundle)
            for made_for in ("operator", "auditor", f"player:{player}"):
                made = bundle if made_for == "operator" else for_recipient(bundle, made_for)
                bundles.append((f"{name} for {made_for}", audit.bundle_bytes(made), key))
    finally:
        app.close()
    for name, raw, key in bundles:
        verdict = audit.verify_bundle(raw, PublicKeys.parse(key))
        assert verdict.status == "PASS", (name, verdict.render())
    return bundles


def _platform_bundles(tmp: Path) -> list[tuple[str, bytes, str]]:
    """Bundles of a settled and a voided round on the reference platform's wallets (``--wallet remote``): each
    carries its ``platform_transactions``, made for the operator, an auditor and a player."""
    from pokdeng_service.wallet.config import WalletConfig
    from pokdeng_service.wallet.remote import RemotePort, attach

    from .wallet.platform_server import Ledger, serve_grpc

    ledger = Ledger(tmp / "ledger.sqlite")
    server, port = serve_grpc(ledger, [])
    app = play.make_app({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp / "store.sqlite")})
    bundles = []
    try:
        attach([app], WalletConfig("remote", f"127.0.0.1:{port}", timeout=2.0, attempts=3, grace=5.0), recovery=False)
        for player in ("p1", "p2", "banker"):
            ledger.open_player(player, 10_000_000, "THB")
        d = play.Driver(app, chooser=play.Chooser(random.Random(5)))
        play.open_table(d, "room-p", "room", [(1, "p1"), (2, "p2"), (3, "banker")])
        play.hold_banker_bid(d, "room-p", [("banker", 10), ("p1", 0), ("p2", 0)])
        settled = play.start_round(d, "room-p")
        play.seat_bets(d, settled, 300)
        play.drive_round(d, settled)
        voided = play.start_round(d, "room-p")
        play.seat_bets(d, voided, 200)
        d.call("void_round", voided, "a card fell face up")
        d.call("sign_tree_head")
        key = SigningKey.from_hex(play.SIGNING_KEY).public.hex()
        for name, round_id in (("platform settled", settled), ("platform voided", voided)):
            bundle = audit.export_bundle(app, round_id)
            assert bundle["platform_transactions"], name
            for made_for in ("operator", "auditor", "player:p1"):
                made = bundle if made_for == "operator" else for_recipient(bundle, made_for)
                bundles.append((f"{name} for {made_for}", audit.bundle_bytes(made), key))
    finally:
        port_ = app.wallet_port
        if isinstance(port_, RemotePort):
            port_.platform.close()
        app.close()
        server.stop(0).wait(5)
        ledger.close()
    return bundles


def _seated(bundle: dict[str, Any]) -> str:
    opened = forgery.event_of(bundle, "round_opened")["data"]
    return str(next(holder for _seat, holder in opened["seats"] if holder))


def _rounds(d: play.Driver) -> Iterator[tuple[str, str]]:
    names = [f"p{i}" for i in range(1, 4)]
    play.open_wallets(d, [*names, "banker"], 10_000_000)
    play.open_table(d, "kingmaker-t", "kingmaker", [(i + 1, n) for i, n in enumerate(names)])
    for _ in range(12):  # a round with side bets (the up card opens their window), else any
        round_id = play.start_round(d, "kingmaker-t", "platform")
        play.seat_bets(d, round_id, 200)
        view = play.drive_round(d, round_id)
        if any(e.kind == "side_bets_settled" for e in view.events):
            break
    yield "kingmaker", round_id
    play.open_table(d, "room-t", "room", [(1, "p1"), (2, "p2"), (3, "banker")])
    play.hold_banker_bid(d, "room-t", [("banker", 10), ("p1", 0), ("p2", 0)])
    room = play.start_round(d, "room-t")
    play.seat_bets(d, room, 300)
    play.drive_round(d, room)
    yield "room", room
    play.open_table(d, "ante-t", "ante", min_stake=100, max_stake=1000)
    ante = play.start_round(d, "ante-t")
    play.place_bets(d, ante, [(1, "p1", 200), (3, "p2", 400), (3, "p3", 200)])
    play.drive_round(d, ante)
    yield "ante", ante
    play.open_table(d, "classic-t", "classic", [(1, "p1"), (2, "p2")])
    for _ in range(20):  # voided after its deal: its cards are on the record, nothing is paid
        voided = play.start_round(d, "classic-t")
        play.seat_bets(d, voided, 100)
        d.call("deal", voided)
        if d.app.round_state(voided).phase is not Phase.CLOSED:
            d.call("void_round", voided, "a card fell face up")
            break
        play.drive_round(d, voided)
    yield "voided", voided


# --- the edits -------------------------------------------------------------------------------------------------


def _paths(value: Any, at: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every value of the document with its path (the document itself first)."""
    yield at, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*at, index))


def _at(document: Any, path: Path_) -> Any:
    for step in path:
        document = document[step]
    return document


INTERESTING = (
    "", "x", "operator", "auditor", "operator:desk-7", "oaerator:desk-7", "service:system", "player:p1", "player:ann",
    "player:", "THB", "aHB", "1.1.0", "a.1.0", "01.1.0", "choice", "auto", "timeout", "settled", "voided", "classic",
    "pokdeng-round-bundle", "pokdeng-chain-v1", "2026-03-14T15:09:26.587725+00:00", "0" * 64, "F" * 64, "5D", "10H",
)  # fmt: skip
NUMBERS = (0, 1, -1, 2, 2**53 - 1, 2**53, -(2**53), 2**63, 0.5, 100.0, -0.0, 1e300)


def _value(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON value (and numbers no bundle may hold: floats, integers beyond 2^53)."""
    kind = rng.randrange(9 if depth < 2 else 7)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randrange(-(2**60), 2**60) if rng.random() < 0.3 else rng.randrange(-3, 10_000)
    if kind == 2:
        return rng.choice(NUMBERS)
    if kind in (3, 4):
        return rng.choice(INTERESTING)
    if kind in (5, 6):
        return "".join(rng.choice("ab:#-.é\n\u0000😀") for _ in range(rng.randrange(6)))
    if kind == 7:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(["", "a", "by", "note", "seat"]): _value(rng, depth + 1) for _ in range(rng.randrange(3))}


def _near(rng: random.Random, old: Any) -> Any:
    """A value a forger would try instead of ``old``: one more or less, its text, its upper case, wrapped."""
    if type(old) is int:
        return rng.choice([old + 1, old - 1, -old, str(old), float(old), bool(old), [old]])
    if isinstance(old, str):
        return rng.choice([old + "x", old[:-1], old.upper(), " " + old, [old], {"text": old}, len(old)])
    if isinstance(old, bool):
        return rng.choice([not old, int(old), str(old).lower()])
    return _value(rng)


def edit(rng: random.Random, bundles: list[tuple[str, bytes, str]]) -> tuple[str, bytes, str, str]:
    """One forger's edit of one of ``bundles``, drawn with ``rng``: (the genuine bundle's name, the edited file,
    its key, what the edit did)."""
    name, raw, key = rng.choice(bundles)
    bundle = json.loads(raw)
    places = [(p, v) for p, v in _paths(bundle) if p and p != ("bundle_digest",)]
    member = rng.choice(sorted({str(p[0]) for p, _v in places}))  # (each member alike: not mostly the events)
    path, old = rng.choice([(p, v) for p, v in places if p[0] == member])
    parent = _at(bundle, path[:-1])
    how = rng.choice(["value", "value", "value", "near", "near", "delete", "add"])
    if how == "delete":
        del parent[path[-1]]
        said = f"{path} deleted"
    elif how == "add" and isinstance(old, dict | list):
        new = _value(rng)
        if isinstance(old, dict):
            member = rng.choice(["note", "", "by", "period", "made_for", "x" * rng.randrange(1, 4)])
            member = member if member not in old else member + "_"
            old[member] = new
            said = f"{path} given a member {member!r}: {new!r}"
        else:
            old.insert(rng.randrange(len(old) + 1), new)
            said = f"{path} given an element {new!r}"
    else:
        new = _near(rng, old) if how == "near" else _value(rng)
        if type(new) is type(old) and new == old:
            new = [old]  # (never the same value: an edit changes the file)
        parent[path[-1]] = new
        said = f"{path}: {old!r} -> {new!r}"
    level = rng.choice(["redigest", "rechain", "restate"]) if path[0] == "events" else "redigest"
    return name, _forged(bundle, level), key, f"{said} ({level})"


def _forged(bundle: dict[str, Any], level: str) -> bytes:
    """The edited bundle as a forger writes it: the chain and the restated members recomputed (``level``) where
    the edited events still allow it, the bundle digest recomputed (the service's canonical JSON, which writes
    any value, in the domain or not)."""
    wr = _WR
    if level in ("rechain", "restate"):
        try:
            forgery.rechain(bundle, wr)
            if level == "restate":
                forgery.restate(bundle, wr)
        except Exception:  # (edited beyond what a forger's tools read: the digests are left as they were)
            pass
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    try:
        bundle["bundle_digest"] = hashlib.sha256(codec.canonical_bytes(body)).hexdigest()
        return codec.canonical_bytes(bundle) + b"\n"
    except Exception:  # (a value no canonical writer takes: written as JSON)
        return json.dumps(bundle, separators=(",", ":")).encode() + b"\n"


_WR: Any = worked_round()


def _unchanged_meaning(name: str, raw: bytes, genuine: dict[str, bytes]) -> bool:
    """Whether the edited bundle says what its genuine one says to every check, as docs/audit.md ("What every
    member rests on") lists them: ``made_for`` relabelled as another recipient whose balances are the same (an
    operator's and an auditor's export hold the same; a voided round's hold none for anyone), or the table
    checkpoint's proof (``inclusion``) removed (null: evidence taken away, nothing else said); nothing else."""
    edited = json.loads(raw)
    original = json.loads(genuine[name])
    if not isinstance(edited, dict):
        return False
    if edited.get("made_for") != original["made_for"] and _calls_for(original, edited.get("made_for")):
        edited["made_for"] = original["made_for"]
    if "inclusion" in edited and edited["inclusion"] is None:
        edited["inclusion"] = original.get("inclusion")
    if "platform_transactions" not in edited and "platform_transactions" in original:
        edited["platform_transactions"] = original["platform_transactions"]  # (removed: evidence taken away)
    edited.pop("bundle_digest", None)
    original.pop("bundle_digest", None)
    return json.dumps(edited, sort_keys=True) == json.dumps(original, sort_keys=True)  # (3.0 is not 3)


def _calls_for(bundle: dict[str, Any], made_for: object) -> bool:
    """Whether a bundle made for ``made_for`` would list exactly ``bundle``'s balances (docs/audit.md, balances)."""
    events = bundle["events"]
    settled = [e["data"]["wallets"] for e in events if e["kind"] == "round_settled"]
    wallets = [wallet for wallet, _reserved, _net in settled[0]] if settled else []
    if made_for in ("operator", "auditor"):
        expected = wallets
    elif isinstance(made_for, str) and made_for.startswith("player:") and len(made_for) > 7:
        player = made_for.removeprefix("player:")
        opened = forgery.event_of(bundle, "round_opened")["data"]
        people = {holder for _seat, holder in opened["seats"] if holder} | {opened["banker_player"]}
        people |= {e["data"]["player"] for e in events if e["kind"] in ("bet_placed", "side_bet_placed")}
        if player not in people:
            return False
        expected = [player] if player in wallets else []
    else:
        return False
    return [entry["wallet"] for entry in bundle["balances"]] == expected


# --- the properties --------------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(rng=st.randoms(use_true_random=False))
def test_every_edit_gets_a_verdict_and_none_passes(rng: random.Random, genuine: list[tuple[str, bytes, str]]) -> None:
    name, raw, key, said = edit(rng, genuine)
    by_name = {n: r for n, r, _k in genuine}
    if raw == by_name[name]:
        return  # (the edit undone by the forger's tools: nothing to judge)
    keys = PublicKeys.parse(key)
    keyed, unkeyed = audit.verify_bundle(raw, keys), audit.verify_bundle(raw)
    assert isinstance(keyed, Verdict) and isinstance(unkeyed, Verdict)
    assert unkeyed.status != "PASS", (name, said, unkeyed.render())
    public = bytes.fromhex(key)
    documented = _WR.verify(raw, {_WR.key_id(public): public})
    assert _WR.verify(raw).status != "PASS", (name, said)
    if _unchanged_meaning(name, raw, by_name):
        assert keyed.status == documented.status == "PASS", (name, said, keyed.render())
        return
    assert keyed.status == "FAIL", (name, said, keyed.render())
    assert documented.status == "FAIL", (name, said, documented.render())


def test_the_edits_reach_every_member(genuine: list[tuple[str, bytes, str]]) -> None:
    """The edits can reach every member of every genuine bundle: each path is a place ``edits`` draws from."""
    for _name, raw, _key in genuine:
        paths = {p for p, _v in _paths(json.loads(raw)) if p}
        assert {("made_for",), ("balances",), ("inclusion",), ("log",), ("events",)} <= paths
        assert any(p[:1] == ("events",) and p[-1:] == ("by",) for p in paths)


@pytest.mark.node
def test_the_page_fails_every_edit_too(genuine: list[tuple[str, bytes, str]]) -> None:
    """The page's scripts (the dispute and verifier pages) on the same edits, drawn once (seeded), in one run of
    Node: with the key FAIL (or, for ``operator`` relabelled ``auditor``, PASS); without it, never PASS."""
    from .test_page_verifier import RUNNER, SCRIPTS, STATIC

    found = shutil.which("node")
    if found is None:
        unavailable("Node.js is not installed (node)")
    by_name = {n: r for n, r, _k in genuine}
    rng = random.Random(8785)
    cases = [case for case in (edit(rng, genuine) for _ in range(EXAMPLES)) if case[1] != by_name[case[0]]]
    request = {
        "scripts": [str(STATIC / name) for name in SCRIPTS],
        "cases": [
            {"bundle": base64.b64encode(raw).decode(), "keys": keys}
            for _name, raw, key, _said in cases
            for keys in (key, "")
        ],
    }
    result = subprocess.run(
        [found, "-e", RUNNER], input=json.dumps(request), capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stderr
    verdicts = json.loads(result.stdout)["verdicts"]
    for i, (name, raw, _key, said) in enumerate(cases):
        keyed, unkeyed = verdicts[2 * i], verdicts[2 * i + 1]
        assert unkeyed["status"] != "PASS", (name, said, unkeyed["rendered"])
        expected = "PASS" if _unchanged_meaning(name, raw, by_name) else "FAIL"
        assert keyed["status"] == expected, (name, said, keyed["rendered"])
