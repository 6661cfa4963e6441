"""docs/audit.md is enough to verify a round: its worked example, and a verifier written from the docs alone.

``docs/examples/worked_round.py`` checks a round bundle without importing pokdeng. These tests run it
on the worked example (``docs/examples/worked_round.json``) and on bundles the service exports now,
edit the example and expect the failed check to be named, hold every hex value docs/audit.md quotes
to the bundle and the script's output (so the docs cannot drift from either), prove the script's
primitives (canonical JSON, chain links, Merkle proofs, the signed bytes, the shuffle) equal to the
service's, and check that ``docs/examples/make_worked_round.py`` still writes the example's bytes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pokdeng_core.round_state import Phase
from pokdeng_core.shuffle import derive_client_seed, shuffled_deck
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.audit.export import for_player
from pokdeng_service.store import codec, merkle
from pokdeng_service.store.signing import SigningKey, TreeHead
from pokdeng_service.store.vault import SeedVault
from pokdeng_testkit.keys import OTHER_VAULT_KEY

from . import forgery
from .service import play

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
SCRIPT = EXAMPLES / "worked_round.py"
BUNDLE = EXAMPLES / "worked_round.json"
MAKER = EXAMPLES / "make_worked_round.py"
AUDIT_MD = ROOT / "docs" / "audit.md"
TEST_KEY = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"  # RFC 8032 test 1 (public)
HEX = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{16,}(?![0-9A-Za-z])")


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def wr() -> ModuleType:
    """The standalone verifier, imported from its file (it imports nothing of pokdeng)."""
    return _load(SCRIPT, "worked_round_standalone")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def _failed(output: str) -> set[str]:
    """The names of the checks a verdict marks BAD."""
    return {m.group(1) for m in re.finditer(r"^  BAD  ([^:]+):", output, flags=re.MULTILINE)}


# --- (1) the worked example verifies --------------------------------------------------------------


def test_the_script_imports_nothing_of_pokdeng() -> None:
    source = SCRIPT.read_text(encoding="utf-8")
    imported = re.findall(r"^\s*(?:from|import)\s+([\w.]+)", source, flags=re.MULTILINE)
    assert imported and not [name for name in imported if name.startswith("pokdeng")], imported
    allowed = {"argparse", "hashlib", "hmac", "json", "re", "struct", "sys", "collections", "fractions", "pathlib"}
    allowed |= {"datetime"}  # (the standard library's: a stored time must exist)
    allowed |= {"typing", "__future__", "cryptography"}
    assert {name.split(".")[0] for name in imported} <= allowed, imported


def test_the_worked_example_verifies() -> None:
    result = _run(str(BUNDLE), "--key", TEST_KEY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS  bundle of round demo#1"), result.stdout
    assert not _failed(result.stdout) and "WARN" not in result.stdout
    for check in ("form", "bundle digest", "chain", "cards", "turns", "hands", "money", "inclusion", "anchor"):
        assert f"  ok   {check}:" in result.stdout, check
    unanchored = _run(str(BUNDLE))  # no key: every check passes, but nothing anchors it (exit 5)
    assert unanchored.returncode == 5 and "WARN unanchored" in unanchored.stdout, unanchored.stdout
    assert unanchored.stdout.startswith("UNANCHORED  bundle of round demo#1"), unanchored.stdout
    assert _run(str(BUNDLE), "--allow-unanchored").returncode == 0
    other_key = _run(str(BUNDLE), "--key", SigningKey.from_hex(play.SIGNING_KEY).public.hex())
    assert other_key.returncode == 1 and _failed(other_key.stdout) == {"anchor"}, other_key.stdout


def test_the_service_verifies_the_worked_example_too() -> None:
    from pokdeng_service.store.signing import PublicKeys

    verdict = audit.verify_bundle(BUNDLE.read_bytes(), PublicKeys([bytes.fromhex(TEST_KEY)]))
    assert verdict.status == "PASS" and not verdict.warnings, verdict.render()
    unkeyed = audit.verify_bundle(BUNDLE.read_bytes())
    assert unkeyed.ok and unkeyed.status == "UNANCHORED", unkeyed.render()
    assert unkeyed.render().startswith("UNANCHORED  bundle of round demo#1\n")


# --- (2) edits fail, naming what failed ----------------------------------------------------------


def _card(bundle: dict[str, Any]) -> None:
    forgery.event_of(bundle, "cards_dealt")["data"]["cards"][0][1] = "6D"  # ann's first card: 5D in the shoe


def _amount(bundle: dict[str, Any]) -> None:
    forgery.event_of(bundle, "bet_settled")["data"]["net"] = -401  # ann's loss: -400


def _contribution(bundle: dict[str, Any]) -> None:
    forgery.event_of(bundle, "client_seed_contributed", 1)["data"]["client_seed"] = "ann-lucky-8"


Edit = Callable[[bytes, Any], bytes]


def _json_edit(change: Callable[[dict[str, Any]], None], *, rechain: bool = False, redigest: bool = True) -> Edit:
    def edit(raw: bytes, wr: Any) -> bytes:
        bundle = json.loads(raw)
        change(bundle)
        if rechain:
            forgery.rechain(bundle, wr)
        return forgery.redigest(bundle, wr) if redigest else bytes(wr.canonical(bundle)) + b"\n"

    return edit


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(bundle: dict[str, Any]) -> None:
        target: Any = bundle
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return change


EDITS: dict[str, tuple[Edit, set[str], bool]] = {
    # name: (edit, the checks that must fail, whether exactly those fail)
    "a byte after the newline": (lambda raw, _wr: raw + b" ", {"form"}, True),
    "the newline removed": (lambda raw, _wr: raw[:-1], {"form"}, True),
    "a space in the file": (lambda raw, _wr: raw.replace(b'{"balances":', b'{ "balances":', 1), {"form"}, True),
    "two keys swapped": (
        lambda raw, _wr: raw.replace(
            b'"format":"pokdeng-round-bundle","format_version":2',
            b'"format_version":2,"format":"pokdeng-round-bundle"',
            1,
        ),
        {"form"},
        True,
    ),
    "a card in the file": (
        lambda raw, _wr: raw.replace(b'"cards":[[1,"5D"]', b'"cards":[[1,"6D"]', 1),
        {"bundle digest", "chain", "cards"},
        True,
    ),
    "a card, re-digested": (_json_edit(_card), {"chain", "cards"}, True),
    "a card, every digest recomputed": (_json_edit(_card, rechain=True), {"cards", "inclusion", "log inclusion"}, True),
    "an amount, re-digested": (_json_edit(_amount), {"chain", "money"}, False),
    "an amount, every digest recomputed": (_json_edit(_amount, rechain=True), {"money", "log inclusion"}, False),
    "a stored digest": (_json_edit(_set(("events", 5, "digest"), "0" * 64)), {"chain"}, True),
    "a payout's copy": (_json_edit(_set(("payouts", 0, "net"), 0)), {"copies"}, True),
    "the server seed": (_json_edit(_set(("shuffle", "server_seed"), "00" * 32)), {"commitment"}, False),
    "a contribution, every digest recomputed": (
        _json_edit(_contribution, rechain=True),
        {"client seed", "log inclusion"},
        False,
    ),
    "the deck order": (_json_edit(_set(("shuffle", "deck_order", 51), "5D")), {"shuffle"}, False),
    "a balance": (_json_edit(_set(("balances", 0, "after"), 9700)), {"balances"}, True),
    "the head's signature": (_json_edit(_set(("log", "head", "signature"), "00" * 64)), {"anchor"}, True),
    "the head's size": (_json_edit(_set(("log", "head", "tree_size"), 6)), {"anchor"}, True),
    "the head's time": (_json_edit(_set(("log", "head", "timestamp"), 1773500966660)), {"anchor"}, True),
    "the head's root": (_json_edit(_set(("log", "head", "root_hash"), "11" * 32)), {"log inclusion"}, True),
    "the checkpoint's root": (_json_edit(_set(("inclusion", "root"), "22" * 32)), {"inclusion"}, True),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_an_edit_fails_the_check_it_belongs_to(wr: ModuleType, name: str, tmp_path: Path) -> None:
    edit, expected, exactly = EDITS[name]
    edited = tmp_path / "edited.json"
    edited.write_bytes(edit(BUNDLE.read_bytes(), wr))
    result = _run(str(edited), "--key", TEST_KEY)
    assert result.returncode == 1, result.stdout
    assert result.stdout.startswith("FAIL  bundle"), result.stdout
    failed = _failed(result.stdout)
    if exactly:
        assert failed == expected, result.stdout
    else:
        assert expected <= failed, result.stdout


def test_unreadable_input_exits_2(tmp_path: Path) -> None:
    assert _run(str(tmp_path / "missing.json")).returncode == 2
    assert _run(str(BUNDLE), "--key", "not-a-key-file").returncode == 2
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"not json\n")
    result = _run(str(garbage))
    assert result.returncode == 1 and _failed(result.stdout) == {"form"}, result.stdout


# --- (3) the docs quote the bundle and the script's output ----------------------------------------


@pytest.fixture(scope="module")
def explained() -> str:
    result = _run(str(BUNDLE), "--key", TEST_KEY, "--explain")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _worked_section(text: str) -> str:
    start = text.index("## Worked example")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def test_every_hex_value_of_the_docs_comes_from_the_bundle_or_the_script(wr: ModuleType, explained: str) -> None:
    text = AUDIT_MD.read_text(encoding="utf-8")
    maker = _load(MAKER, "make_worked_round_constants")  # (constants only: build() is not called)
    jcs_example = wr.canonical({"b": [1, True, None], "a": "é\n", "A": '\u001f"/'}).hex()
    haystack = "\n".join([BUNDLE.read_text(encoding="utf-8"), explained, maker.SIGNING_KEY, jcs_example])
    quoted = HEX.findall(text)
    assert len(quoted) > 60, "docs/audit.md quotes the worked example's values"
    missing = sorted({value for value in quoted if value not in haystack})
    assert not missing, f"docs/audit.md quotes values that are not the worked example's: {missing}"


def test_the_worked_example_quotes_every_value_it_promises(explained: str) -> None:
    section = _worked_section(AUDIT_MD.read_text(encoding="utf-8"))
    bundle = json.loads(BUNDLE.read_bytes())
    head = bundle["log"]["head"]
    wanted = [e["digest"] for e in bundle["events"]]
    wanted += [bundle["chain"]["genesis"], bundle["chain"]["last"], bundle["bundle_digest"]]
    wanted += [bundle["shuffle"][k] for k in ("server_seed", "commitment", "client_seed")]
    wanted += [bundle["log"]["leaf"], *bundle["log"]["path"], head["root_hash"], head["signature"], head["key_id"]]
    wanted += [bundle["inclusion"]["root"], *bundle["inclusion"]["path"], TEST_KEY]
    wanted += re.findall(r"log path: .* = ([0-9a-f]{64})", explained)  # every node of the proof's walk
    wanted += re.findall(r"signed bytes \(112\): ([0-9a-f]+)", explained)  # the head's signed bytes, whole
    geneses = re.findall(r"\(the genesis of .*: ([0-9a-f]{64})\)", explained)  # the table's and the wallets'
    assert len(geneses) == 3, explained
    wanted += geneses
    missing = [value for value in wanted if value not in section]
    assert not missing, f"the worked example of docs/audit.md lacks {missing}"
    assert f"{len(BUNDLE.read_bytes()):,}" in section  # the file's size
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    assert f"{len(codec.canonical_bytes(body)):,}" in section  # the body's size


def test_the_docs_links_resolve() -> None:
    headings: dict[str, set[str]] = {}
    for name in ("audit.md", "checkpoints.md", "shuffle.md"):
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        headings[name] = {_anchor(line.lstrip("#").strip()) for line in text.splitlines() if line.startswith("#")}
    for name in headings:
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([\w./-]*?)(?:#([\w-]+))?\)", text):
            page = target or name
            if target:
                assert (ROOT / "docs" / target).exists(), f"{name} links to {target}, which does not exist"
            if anchor:
                assert page in headings and anchor in headings[page], (
                    f"{name} links to {page}#{anchor}: no such heading"
                )


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lowercase, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


# --- the script's primitives are the service's ----------------------------------------------------


def _values(rng: random.Random, depth: int = 0) -> Any:
    """Arbitrary values of the canonical domain (text with escapes, characters beyond U+FFFF, big integers)."""
    alphabet = [
        "a",
        "Z",
        "é",
        "\n",
        "\t",
        "\u0000",
        "\u001f",
        '"',
        "\\",
        "/",
        "\u007f",
        "\u2028",
        "😀",
        "｡",
        "ป",
        "\ufeff",
    ]
    kind = rng.randrange(7 if depth < 3 else 4)
    if kind == 0:
        return rng.choice([0, 1, -1, 2**53 - 1, -(2**53 - 1), rng.randrange(-(10**12), 10**12)])
    if kind == 1:
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    if kind == 2:
        return rng.choice([True, False, None])
    if kind == 3:
        return rng.randrange(100)
    if kind == 4:
        return [_values(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 4))): _values(rng, depth + 1) for _ in range(4)
    }


def test_canonical_json_is_the_services(wr: ModuleType) -> None:
    rng = random.Random(8785)
    for _ in range(2000):
        value = _values(rng)
        assert wr.canonical(value) == codec.canonical_bytes(value), value
    for outside in (2**53, -(2**53), 1.5, {1: "x"}):
        with pytest.raises(wr.DomainError):
            wr.canonical(outside)


def test_chain_links_are_the_services(wr: ModuleType) -> None:
    for stream in ("demo#1", "table:demo", "wallet:ann", "t/shard#12", "ป๊อก#1"):
        assert wr.genesis(stream) == codec.genesis_digest(stream)
    data = {"seat": 1, "player": "ann", "stake": 200, "reserved": 1000, "banker_reserved": 0}
    previous = codec.genesis_digest("demo#1")
    stamp = "2026-03-14T15:09:26+00:00"
    assert wr.link(previous, "bet_placed", data, 6, "r-1", stamp) == codec.chain_digest(
        previous, "bet_placed", data, 6, "r-1", stamp
    )
    args = ("Deposited", {"amount": 5, "request_id": "d"}, 2, stamp, 5, {"t#1": 10})
    assert wr.wallet_link(previous, *args) == codec.wallet_digest(previous, *args)


def test_merkle_proofs_are_the_services(wr: ModuleType) -> None:
    leaves = [merkle.leaf_hash(f"t#{i}", hashlib.sha256(str(i).encode()).hexdigest()) for i in range(41)]
    assert wr.leaf_hash("t#0", hashlib.sha256(b"0").hexdigest()) == leaves[0]
    assert wr.merkle_root([]) == merkle.EMPTY_ROOT
    for size in range(1, 41):
        root = merkle.root(leaves[:size])
        assert wr.merkle_root(leaves[:size]) == root
        for index in range(size):
            path = merkle.inclusion_proof(leaves[:size], index)
            assert wr.root_from_inclusion(leaves[index], index, size, path) == root, (size, index)
            assert wr.verify_inclusion(leaves[index], index, size, path, root)
            assert merkle.verify_inclusion(leaves[index], index, size, path, root)
            assert not wr.verify_inclusion(leaves[index], index, size, path, root[:31])
            assert not wr.verify_inclusion(leaves[index][:31], index, size, path, root)
            assert wr.root_from_inclusion(leaves[index], index, size + 1, path) != merkle.root(leaves[: size + 1])
            if path:
                assert wr.root_from_inclusion(leaves[index], index, size, path[:-1]) != root
        assert not wr.verify_consistency(0, size, wr.merkle_root([]), root, [])  # no proof from the empty tree
        assert not merkle.verify_consistency(0, size, merkle.EMPTY_ROOT, root, [])
        for first in range(1, size + 1):
            proof = merkle.consistency_proof(leaves[:size], first)
            old = merkle.root(leaves[:first])
            assert wr.verify_consistency(first, size, old, root, proof), (first, size)
            assert merkle.verify_consistency(first, size, old, root, proof)
            if 0 < first < size:
                assert not wr.verify_consistency(first, size, leaves[0], root, proof) or first == 1
                assert not wr.verify_consistency(first, size, old, leaves[1], proof)


def test_signed_bytes_and_key_ids_are_the_services(wr: ModuleType) -> None:
    key = SigningKey.from_hex(play.SIGNING_KEY)
    head = key.sign("pokdeng-0123456789abcdef", 7, hashlib.sha256(b"root").digest(), 1_773_500_966_659)
    assert wr.head_signed_bytes(head.as_dict()) == TreeHead.from_dict(head.as_dict()).signed_bytes()
    assert wr.key_id(key.public) == key.key_id


def test_the_shuffle_is_the_services(wr: ModuleType) -> None:
    rng = random.Random(52)
    for _ in range(20):
        seed = rng.randbytes(32)
        client = "".join(rng.choice("ab😀ป\u0000") for _ in range(rng.randrange(8)))
        nonce, decks = rng.randrange(2**64), rng.choice([1, 8])
        assert wr.shuffle(seed, client, nonce, decks) == [str(c) for c in shuffled_deck(seed, client, nonce, decks)]
    pairs = [("bob", "🎲 roll"), ("alice", "lucky-7"), ("", "table 9 round 12")]
    assert wr.derive_client_seed(pairs) == derive_client_seed(pairs)


# --- (4) bundles the service exports now verify with the script -----------------------------------


def _rounds(d: play.Driver, profile: str, count: int, table: str, **table_args: Any) -> Iterator[str]:
    names = [f"{table}-p{i}" for i in range(1, 4)]
    play.open_wallets(d, names)
    if profile == "ante":
        play.open_table(d, table, profile, min_stake=100, max_stake=1000)
    elif profile == "room":
        banker = f"{table}-banker"
        play.open_wallets(d, [banker], 10_000_000)
        play.open_table(d, table, profile, [(1, names[0]), (2, names[1]), (3, banker)])
        play.hold_banker_bid(d, table, [(banker, 10), (names[0], 0), (names[1], 0)])
    else:
        if table_args.get("dealer"):
            play.open_wallets(d, [table_args["dealer"]], 10_000_000)
        play.open_table(d, table, profile, [(i + 1, n) for i, n in enumerate(names)], **table_args)
    for n in range(count):
        round_id = play.start_round(d, table, f"platform-{n}" if n % 2 else "")
        if profile == "ante":
            play.place_bets(d, round_id, [(1, names[0], 200), (3, names[1], 400), (3, names[2], 200)])
        else:
            play.seat_bets(d, round_id, 200)
            if profile == "classic" and table_args.get("dealer") is None:
                d.call("place_bet", round_id, 1, names[2], 100, client_seed=f"backer-{n}")  # a backer of seat 1
                d.call("contribute_seed", round_id, names[1], "ป๊อก 😀")
        play.drive_round(d, round_id)
        yield round_id


def _verify_both(wr: ModuleType, raw: bytes, keys: dict[str, bytes]) -> Any:
    assert audit.verify_bundle(raw).ok, audit.verify_bundle(raw).render()
    verdict = wr.verify(raw, keys)
    assert verdict.ok, verdict.render()
    return verdict


def test_bundles_the_service_exports_verify_with_the_script(
    wr: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeds = random.Random(2027)  # the server seeds of these rounds, pinned: the same rounds on every run
    monkeypatch.setattr("pokdeng_service.application.rounds.fresh_seed", lambda: seeds.randbytes(32))
    app = play.make_app({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    try:
        d = play.Driver(app, chooser=play.Chooser(random.Random(12), timeout=0.15, reveal=0.6))
        rounds: list[str] = []
        for profile in play.PROFILES:
            rounds += _rounds(d, profile, 6, f"{profile}-t")
        rounds += _rounds(d, "classic", 4, "straights-t", options={"straights": True, "ace_low": True})
        rounds += _rounds(d, "classic", 4, "dealer-t", dealer="dealer-t-dealer")
        before = play.start_round(d, "classic-t", "")  # voided before its deal: no client seed, no shoe
        play.seat_bets(d, before, 100)
        d.call("void_round", before, "dealer error")
        after = ""
        for _ in range(20):  # voided after its deal: the cards are on the record, nothing is paid
            after = play.start_round(d, "classic-t", "")
            play.seat_bets(d, after, 100)
            d.call("deal", after)
            if app.round_state(after).phase is not Phase.CLOSED:
                d.call("void_round", after, "regulatory stop")
                break
        unanchored = [before, after]
        d.call("checkpoint_table", "kingmaker-t", "shift 1")
        d.call("sign_tree_head")
        late = list(_rounds(d, "kingmaker", 1, "late-t"))  # closed after the last head: no anchor
        public = SigningKey.from_hex(play.SIGNING_KEY).public
        keys = {wr.key_id(public): public}
        for round_id in [*rounds, *unanchored]:
            bundle = audit.export_bundle(app, round_id)
            raw = audit.bundle_bytes(bundle)
            verdict = _verify_both(wr, raw, keys)
            assert not verdict.warnings, verdict.render()
            for entry in bundle["balances"][:1]:  # a player's own bundle: its balances only
                _verify_both(wr, audit.bundle_bytes(for_player(bundle, entry["wallet"])), keys)
        late_raw = audit.bundle_bytes(audit.export_bundle(app, late[0]))
        assert wr.verify(late_raw, keys).ok is False  # with keys, a bundle no head covers fails its anchor
        assert any("unanchored" in w for w in wr.verify(late_raw).warnings)
        events = [e for r in rounds for e in audit.export_bundle(app, r)["events"]]
        kinds = {e["kind"] for e in events} | {"selective" for e in events if e["data"].get("selective")}
        assert {"turn_timed_out", "side_bets_settled", "selective", "card_drawn", "pok_declared"} <= kinds, kinds
        for profile in play.PROFILES:  # the command line too, once per profile
            path = tmp_path / f"{profile}.json"
            path.write_bytes(audit.bundle_bytes(audit.export_bundle(app, f"{profile}-t#1")))
            result = _run(str(path), "--key", public.hex())
            assert result.returncode == 0 and not _failed(result.stdout), result.stdout
    finally:
        app.close()


@pytest.mark.parametrize("name", ["kingmaker-settled-1.0.0.json", "kingmaker-voided-1.0.0.json"])
def test_bundles_of_engine_1_0_0_verify_with_the_script(wr: ModuleType, name: str) -> None:
    """Bundles of the engine before contributions (the client seed given with the commitment, no log)."""
    raw = (ROOT / "tests" / "service" / "legacy" / name).read_bytes()
    verdict = wr.verify(raw)
    assert verdict.ok, verdict.render()
    assert "given with the commitment" in dict((n, d) for n, _ok, d in verdict.checks)["client seed"]
    assert any("unanchored" in warning for warning in verdict.warnings)


def test_a_round_voided_without_its_seed_verifies_as_withheld(wr: ModuleType, tmp_path: Path) -> None:
    """The lost-key procedure (docs/operations.md): the round closes without revealing its seed."""
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "store.sqlite")}
    app = play.make_app(env)
    d = play.Driver(app)
    play.open_wallets(d, ["a", "b"])
    play.open_table(d, "k", "classic", [(1, "a"), (2, "b")])
    dealt = ""
    for _ in range(30):
        dealt = play.start_round(d, "k")
        play.seat_bets(d, dealt, 100)
        d.call("deal", dealt)
        if app.round_state(dealt).phase is Phase.PLAYER_TURNS:
            break
        play.drive_round(d, dealt)
    app.close()
    lost = PokdengApp(env, vault=SeedVault.from_hex(OTHER_VAULT_KEY))  # the old key is gone
    try:
        lost.void_round("void-1", dealt, "vault key lost")
        verdict = wr.verify(audit.bundle_bytes(audit.export_bundle(lost, dealt)))
        assert verdict.ok, verdict.render()
        assert any("withheld" in warning for warning in verdict.warnings)
    finally:
        lost.close()


# --- the example is what the service makes ---------------------------------------------------------


def test_make_worked_round_writes_the_example_again(tmp_path: Path) -> None:
    """If the service's records change, regenerate the example and its values in docs/audit.md:
    ``python docs/examples/make_worked_round.py``, then ``python docs/examples/worked_round.py
    docs/examples/worked_round.json --key <TEST_KEY> --explain`` for the values."""
    out = tmp_path / "again.json"
    result = subprocess.run(
        [sys.executable, str(MAKER), "-o", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert out.read_bytes() == BUNDLE.read_bytes(), "the service now exports another bundle: regenerate the example"


def test_the_example_is_a_small_classic_round_with_proofs() -> None:
    bundle = json.loads(BUNDLE.read_bytes())
    assert bundle["profile"]["name"] == "classic" and len(bundle["payouts"]) == 2
    assert bundle["log"]["head"]["tree_size"] == 5 and len(bundle["log"]["path"]) == 3
    assert bundle["inclusion"]["size"] == 2 and len(bundle["inclusion"]["path"]) == 1
    assert bundle["log"]["head"]["key_id"] == SigningKey.from_hex(_load(MAKER, "mwr").SIGNING_KEY).key_id


@pytest.mark.parametrize("name", list(forgery.RIDE_ALONG))
def test_nothing_rides_along_in_a_bundle(wr: ModuleType, name: str, tmp_path: Path) -> None:
    """Found by a verifier written from the docs alone: these passed ``pokdeng verify --key`` (an event of
    an unknown kind without a digest was passed over by the chain, a stated net was never read, a member
    no check reads could be added to a signed bundle). The docs' verifier and the service's both refuse them."""
    from pokdeng_service.audit.bundle import verify_bundle
    from pokdeng_service.store.signing import PublicKeys

    edited = tmp_path / "edited.json"
    edited.write_bytes(forgery.ride_along(BUNDLE.read_bytes(), wr, name))
    result = _run(str(edited), "--key", TEST_KEY)
    assert result.returncode == 1 and result.stdout.startswith("FAIL  bundle"), result.stdout
    verdict = verify_bundle(edited.read_bytes(), PublicKeys.parse(TEST_KEY))
    assert not verdict.ok, verdict.render()


def test_the_record_rules_beyond_the_chain() -> None:
    """``record``: times as stored, the round id, the nonce the round's number, operators' commands named."""
    from pokdeng_service.application.views import RecordedEvent
    from pokdeng_service.audit.replay import record_problem

    def problem(change: Callable[[list[dict[str, Any]]], None]) -> str | None:
        events = json.loads(BUNDLE.read_bytes())["events"]
        change(events)
        return record_problem([RecordedEvent(**e) for e in events])

    assert problem(lambda events: None) is None
    committed = next(
        i for i, e in enumerate(json.loads(BUNDLE.read_bytes())["events"]) if e["kind"] == "shuffle_committed"
    )
    assert "nonce" in (problem(lambda events: events[committed]["data"].update(nonce=1001)) or "")
    assert "stored form" in (
        problem(lambda events: events[3].update(timestamp=events[3]["timestamp"][:-6] + "Z")) or ""
    )
    assert "round id" in (problem(lambda events: events[0]["data"].update(round_no=7)) or "")
    assert "sender" in (problem(lambda events: events[0]["data"].update(by="")) or "")
    assert problem(lambda events: events[0]["data"].pop("by")) is None  # (a record made before senders were named)


@pytest.mark.parametrize("name", list(forgery.RESTATED))
def test_what_a_bundle_restates_is_compared_whole(wr: ModuleType, name: str, tmp_path: Path) -> None:
    """Found by an outside attacker: the docs' verifier (and the page) passed these, which `pokdeng verify
    --bundle --key` refused: it compared only each decision's command name, read `chain` and `shuffle`
    member by member and never an event's data members. Every verifier now fails the same one check
    (docs/audit.md: `copies` compares `decisions`, `shuffle` and `chain` whole; `form`, as pokdeng's
    `shape`, every event's data members); the same bundle without the edit passes them all."""
    case = forgery.RESTATED[name]
    key = ["--allow-unanchored"] if case.rechained else ["--key", TEST_KEY]
    for edit in (False, True):
        path = tmp_path / f"{'edited' if edit else 'genuine'}.json"
        path.write_bytes(forgery.restated(BUNDLE.read_bytes(), wr, name, edit=edit))
        documented = _run(str(path), *key)
        service = subprocess.run(
            [sys.executable, "-m", "pokdeng_service.cli", "verify", "--bundle", str(path), *key],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if not edit:
            assert documented.returncode == 0 and service.returncode == 0, documented.stdout + service.stdout
            continue
        assert documented.returncode == 1 and _failed(documented.stdout) == {case.check}, documented.stdout
        assert service.returncode == 1 and _failed(service.stdout) == {case.service}, service.stdout


def test_the_docs_verifier_knows_every_events_data_members(wr: ModuleType) -> None:
    """`form` holds each event's data to docs/events.md's members: the core's, less those added later; and to
    their types, the service's (``audit.forms``: docs/audit.md, "Types")."""
    from pokdeng_core import events
    from pokdeng_service.audit import forms

    assert {kind: set(codec.field_names(cls)) for kind, cls in events.EVENT_BY_KIND.items()} == wr.EVENT_DATA
    assert {kind: set(added) for kind, added in events.ADDED_FIELDS.items()} == wr.ADDED_DATA
    assert {kind: dict(members) for kind, members in forms.EVENT_DATA_TYPES.items()} == wr.EVENT_DATA_TYPES
    assert {kind: set(added) for kind, added in forms.ADDED_DATA.items()} == wr.ADDED_DATA
    assert set(forms.BUNDLE_TYPES) == set(wr.VERSIONS)
    for version, members in forms.BUNDLE_TYPES.items():
        assert _same_types(members, wr.VERSIONS[version]["members"]), version
        assert set(forms.OPTIONAL_MEMBERS[version]) == wr.VERSIONS[version]["optional"]
    assert _same_types(forms.INCLUSION_TYPES, wr.VERSIONS[2]["inclusion"])
    assert _same_types(forms.INCLUSION_TYPES_V1, wr.VERSIONS[1]["inclusion"])
    assert _same_types(forms.LOG_TYPES, wr.LOG_TYPES)


def _same_types(mine: Any, theirs: Any) -> bool:
    """Two type specs alike, whatever mapping or sequence types hold them."""
    if isinstance(mine, dict) or hasattr(mine, "items"):
        return (
            isinstance(theirs, dict) and set(mine) == set(theirs) and all(_same_types(mine[k], theirs[k]) for k in mine)
        )
    if isinstance(mine, list | tuple):
        return type(mine) is type(theirs) and len(mine) == len(theirs) and all(map(_same_types, mine, theirs))
    return bool(mine == theirs)


def _type_text(spec: Any) -> str:
    """A type as docs/audit.md writes it: ``int``, ``text?``, ``[int, text]``, ``[text …]``."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, tuple):
        return "[" + ", ".join(_type_text(item) for item in spec) + "]"
    return "[" + _type_text(spec[0]) + " …]"


def test_the_docs_state_every_events_types() -> None:
    """docs/audit.md, "Types": its table of each event's data is the one the verifiers hold them to."""
    from pokdeng_service.audit import forms

    text = AUDIT_MD.read_text(encoding="utf-8")
    section = text[text.index("| kind | `data` |") : text.index("### Senders")]
    rows = dict(re.findall(r"^\| `(\w+)` \| (`.*) \|$", section, flags=re.MULTILINE))
    expected = {
        kind: ", ".join(f"`{name}` {_type_text(spec)}" for name, spec in members.items())
        for kind, members in forms.EVENT_DATA_TYPES.items()
    }
    assert rows == expected


@pytest.mark.parametrize("name", list(forgery.OUTSIDE))
def test_what_the_docs_rule_out_fails_every_verifier(wr: ModuleType, name: str) -> None:
    """Found by a verifier written from the docs alone: `pokdeng verify` passed a malformed sender, a sender on an
    automatic event, engine version `a.1.0`, currency `aHB`, and an operator's export with a balance dropped (or a
    player's relabelled); a seat the table does not have exited 3 with no verdict. Each now fails, in the docs'
    verifier and in `pokdeng verify` alike, naming the checks (docs/audit.md, "Types", "Senders", `balances`)."""
    from pokdeng_service.store.signing import PublicKeys

    case = forgery.OUTSIDE[name]
    raw = forgery.outside(BUNDLE.read_bytes(), wr, name)
    public = bytes.fromhex(TEST_KEY)
    keys = {} if case.events else {wr.key_id(public): public}
    documented = wr.verify(raw, keys)
    assert documented.status == "FAIL", documented.render()
    assert {n for n, ok, _d in documented.checks if not ok} == case.checks, documented.render()
    service = audit.verify_bundle(raw, None if case.events else PublicKeys([public]))
    assert service.status == "FAIL", service.render()
    assert {c.name for c in service.checks if not c.ok} == case.service, service.render()


@pytest.mark.parametrize("name", list(forgery.NUMBERS))
def test_a_number_written_otherwise_than_as_an_integer_fails_form(wr: ModuleType, name: str) -> None:
    """`100.0` and `1e2` are not integers in a bundle (docs/audit.md, "Types"), whatever their value; the bundle
    digest is over values, so the forger need not even recompute it."""
    raw = BUNDLE.read_bytes()
    before, after = forgery.NUMBERS[name]
    edited = raw.replace(before, after, 1)
    assert edited != raw
    service, documented = audit.verify_bundle(edited), wr.verify(edited)
    assert service.status == "FAIL" and [c.name for c in service.checks if not c.ok] == ["form"], service.render()
    assert documented.status == "FAIL" and [n for n, ok, _d in documented.checks if not ok][:1] == ["form"]


def test_a_batch_gets_a_verdict_for_every_file(wr: ModuleType, tmp_path: Path) -> None:
    """`pokdeng verify a.json b.json ...` checks every file to the end whatever the others hold (a seat the table
    does not have used to stop the batch with exit 3, "not found"), names each file's verdict, and exits with
    the worst (docs/audit.md, "Verdicts and exit codes"): 1 FAIL, then 2 a file it cannot read, then 5
    UNANCHORED; 0 when every one passes, or with --allow-unanchored when none failed."""
    files = []
    for i, name in enumerate(forgery.OUTSIDE):
        path = tmp_path / f"edit-{i}.json"
        path.write_bytes(forgery.outside(BUNDLE.read_bytes(), wr, name))
        files.append(str(path))
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\x00\xff not json\n")
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    genuine = str(BUNDLE)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pokdeng_service.cli", "verify", *args]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)

    batch = run(*files, str(garbage), str(deep), str(tmp_path / "missing.json"), genuine, "--key", TEST_KEY)
    assert batch.returncode == 1, batch.stdout + batch.stderr
    assert "Traceback" not in batch.stderr and "cannot read bundle" in batch.stderr
    verdicts = re.findall(r"^(\S+\.json): (PASS|FAIL|UNANCHORED)  ", batch.stdout, flags=re.MULTILINE)
    assert verdicts == [(f, "FAIL") for f in [*files, str(garbage), str(deep)]] + [(genuine, "PASS")], batch.stdout
    assert batch.stdout.rstrip().endswith(f"1 pass, 0 unanchored, {len(files) + 2} fail, 1 unreadable"), batch.stdout
    assert run(genuine, str(tmp_path / "missing.json"), "--key", TEST_KEY).returncode == 2
    assert run(genuine).returncode == 5 and run(genuine, "--allow-unanchored").returncode == 0
    assert run(genuine, genuine, "--key", TEST_KEY).returncode == 0


def test_bundles_of_version_1_verify_as_version_1_did(wr: ModuleType) -> None:
    """The worked example as published in format version 1 (tests/service/legacy/worked-round-bundle-v1.json):
    it passes both verifiers with the key, with a warning of what version 1 leaves unchecked (docs/audit.md,
    "Versions"): its balances may leave wallets out (a wallet dropped still passes), and its checkpoint's
    period, position and digest are read by no check. Version 2 leaves those out and checks the balances."""
    from pokdeng_service.store.signing import PublicKeys

    raw = (ROOT / "tests" / "service" / "legacy" / "worked-round-bundle-v1.json").read_bytes()
    bundle = json.loads(raw)
    assert bundle["format_version"] == 1 and "made_for" not in bundle and "period" in bundle["inclusion"]
    public = bytes.fromhex(TEST_KEY)
    for verdict in (audit.verify_bundle(raw, PublicKeys([public])), wr.verify(raw, {wr.key_id(public): public})):
        assert verdict.status == "PASS" and len(verdict.warnings) == 1, verdict.render()
        assert verdict.warnings[0].startswith("format version 1: its balances may leave wallets out")
    bundle["balances"].pop()
    bundle["inclusion"]["period"] = "another period"
    dropped = forgery.redigest(bundle, wr)
    assert audit.verify_bundle(dropped, PublicKeys([public])).status == "PASS"  # (version 1: nothing can tell)
    bundle["made_for"] = "operator"  # (a version 2 member in a version 1 bundle: not of its form)
    assert audit.verify_bundle(forgery.redigest(bundle, wr), PublicKeys([public])).first_difference.startswith("shape")
