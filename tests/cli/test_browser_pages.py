"""The dispute page and the verifier page in headless Chromium: the round checked in the browser.

The page's JavaScript (``pokdeng_service/web/static/verify-*.js``, WebCrypto) checks a bundle with no
server: genuine bundles of all four profiles pass (a void too, with the Ed25519 signature of the signed
head), edited ones fail naming the checks that failed, the same checks as the documentation's own
verifier (docs/examples/worked_round.py) fails on the same bytes. The pages fit a 360 px phone, print
to PDF, step through the deal card by card, and show a player id holding markup as text.

Chromium is driven through the DevTools protocol over a pipe (tests/cli/browser.py). Without Chromium
these tests are skipped, except under ``CI=true``, where they fail (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pokdeng_service import audit, web
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_OK, main

from .browser import Browser, Page, needs_chromium
from .pages import EDITS, HOSTILE, Store, make_store, worked_round

pytestmark = [pytest.mark.browser, needs_chromium]
ROOT = Path(__file__).resolve().parents[2]
PROFILES = ("classic", "ante", "room", "kingmaker")
WIDTH = 360


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return make_store(tmp_path_factory.mktemp("pages"))


@pytest.fixture(scope="module")
def bundles(store: Store) -> dict[str, bytes]:
    service = PartitionedPokdeng.open_read_only(StoreConfig.from_args(db=str(store.db)))
    try:
        return {
            name: audit.bundle_bytes(audit.export_bundle(service.app_for(round_id, "round"), round_id))
            for name, round_id in store.rounds.items()
            if name != "open"
        }
    finally:
        service.close()


@pytest.fixture(scope="module")
def wr() -> ModuleType:
    return worked_round()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as chromium:
        yield chromium


@pytest.fixture
def tab(browser: Browser) -> Iterator[Page]:
    page = browser.page()
    yield page
    page.close()


def replay_page(store: Store, name: str, folder: Path, key: bool = True) -> Path:
    out = folder / f"{name}.html"
    keys = ["--key", store.public_key] if key else []
    code = main(["replay", store.rounds[name], "--db", str(store.db), "--html", str(out), *keys])
    assert code == EXIT_OK or name == "open"
    return out


def bundle_page(raw: bytes, folder: Path, key: str | None, name: str = "edited") -> Path:
    """A dispute page carrying ``raw`` (a bundle, genuine or edited) as its bundle."""
    events = json.loads(raw)["events"]
    out = folder / f"{name}.html"
    out.write_text(web.dispute_page(events, raw, keys=[key] if key else []), encoding="utf-8")
    return out


def python_verdict(wr: ModuleType, raw: bytes, key: str | None) -> Any:
    keys = {wr.key_id(bytes.fromhex(key)): bytes.fromhex(key)} if key else {}
    return wr.verify(raw, keys)


@pytest.mark.parametrize("name", [*PROFILES, "voided", "hostile"])
def test_genuine_bundles_pass_in_the_browser(
    name: str, store: Store, bundles: dict[str, bytes], wr: ModuleType, tab: Page, tmp_path: Path
) -> None:
    tab.open(replay_page(store, name, tmp_path))
    verdict = tab.verdict()
    assert verdict["ok"] and verdict["verdict"] == "pass" and not verdict["failed"], verdict
    names = [c["name"] for c in verdict["checks"]]
    expected = python_verdict(wr, bundles[name], store.public_key)
    assert expected.ok
    assert names == [n for n, _ok, _d in expected.checks], "the browser makes the documentation's checks"
    anchor = next(c for c in verdict["checks"] if c["name"] == "anchor")
    assert anchor["detail"].startswith("Ed25519 signature of key"), anchor
    assert not verdict["warnings"] and verdict["status"].startswith("PASS")
    if name in ("classic", "kingmaker", "room", "ante"):
        assert "shuffle" in names and "cards" in names and "chain" in names and "bundle digest" in names


@pytest.mark.parametrize("edit", list(EDITS))
@pytest.mark.parametrize("name", ["kingmaker", "ante"])
def test_edited_bundles_fail_naming_what_failed(
    edit: str, name: str, store: Store, bundles: dict[str, bytes], wr: ModuleType, tab: Page, tmp_path: Path
) -> None:
    change, expected = EDITS[edit]
    raw = change(bundles[name], wr)
    assert raw != bundles[name]
    tab.open(bundle_page(raw, tmp_path, store.public_key))
    verdict = tab.verdict()
    failed = set(verdict["failed"])
    assert not verdict["ok"] and verdict["verdict"] == "fail", verdict
    assert expected <= failed, verdict
    documented = python_verdict(wr, raw, store.public_key)
    assert failed == {n for n, ok, _d in documented.checks if not ok}, (verdict, documented.render())
    assert all(f in verdict["status"] for f in failed), verdict["status"]  # the headline names them
    assert any(line.startswith("BAD") for line in verdict["listed"])


def test_unanchored_is_said_plainly(
    store: Store, bundles: dict[str, bytes], wr: ModuleType, tab: Page, tmp_path: Path
) -> None:
    tab.open(bundle_page(bundles["late"], tmp_path, store.public_key, "late"))
    verdict = tab.verdict()  # with a key, a bundle that no signed head covers fails its anchor
    assert verdict["failed"] == ["anchor"]
    assert "unanchored: no signed tree head covers this round" in json.dumps(verdict["checks"])
    tab.open(bundle_page(bundles["late"], tmp_path, None, "late-nokey"))
    verdict = tab.verdict()  # without a key every check passes, but the verdict is UNANCHORED, not PASS
    assert verdict["ok"] and verdict["verdict"] == "unanchored" and verdict["status"].startswith("UNANCHORED")
    assert verdict["warnings"] == ["unanchored: no signed tree head covers this round"]
    tab.open(bundle_page(bundles["classic"], tmp_path, None, "classic-nokey"))
    verdict = tab.verdict()  # a signed head, but no key to check its signature with
    assert verdict["ok"] and verdict["verdict"] == "unanchored" and verdict["status"].startswith("UNANCHORED")
    assert any(w.startswith("unanchored: the signature of key") for w in verdict["warnings"])
    tab.evaluate(f"document.getElementById('key-input').value = '{store.public_key}'")
    tab.evaluate("document.querySelector('#key-form button').click()")
    verdict = tab.verdict(runs=2)  # the key typed in: checked again, anchored
    assert verdict["ok"] and verdict["verdict"] == "pass" and not verdict["warnings"]
    assert any(c["name"] == "anchor" and c["ok"] for c in verdict["checks"])


def test_the_verifier_page_checks_a_chosen_file(
    store: Store, bundles: dict[str, bytes], wr: ModuleType, tab: Page, tmp_path: Path
) -> None:
    out = tmp_path / "verifier.html"
    assert main(["verifier-page", str(out), "--key", store.public_key]) == EXIT_OK
    tab.open(out)
    genuine = tmp_path / "room.json"
    genuine.write_bytes(bundles["room"])
    tab.set_file("#bundle-file", genuine)
    verdict = tab.verdict()
    assert verdict["ok"], verdict
    rows = tab.evaluate("document.querySelectorAll('#payouts tbody tr').length")
    assert rows == len(json.loads(bundles["room"])["payouts"]) and rows > 0
    edited = tmp_path / "edited.json"
    edited.write_bytes(EDITS["an amount, every digest recomputed"][0](bundles["room"], wr))
    tab.set_file("#bundle-file", edited)
    verdict = tab.verdict(runs=2)
    assert not verdict["ok"] and {"money", "log inclusion"} <= set(verdict["failed"])
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"<html>not a bundle</html>")
    tab.set_file("#bundle-file", garbage)
    verdict = tab.verdict(runs=3)
    assert verdict["failed"] == ["form"]


def test_the_primitives_reproduce_the_published_vectors(tab: Page, tmp_path: Path) -> None:
    """docs/shuffle.md's vectors (the rejection step among them), its client seed derivations, and the
    canonical JSON example of docs/audit.md, computed by the page's own code."""
    out = tmp_path / "verifier.html"
    out.write_text(web.verifier_page(), encoding="utf-8")
    tab.open(out)
    vectors = json.loads((ROOT / "tests/core/shuffle_vectors.json").read_text(encoding="utf-8"))
    for vector in vectors["vectors"] if isinstance(vectors, dict) else vectors:
        args = json.dumps([vector["server_seed_hex"], vector["client_seed"], str(vector["nonce"]), vector["decks"]])
        order = tab.evaluate(
            f"(async () => {{ const [s, c, n, d] = {args}; const C = PokdengVerify.core;"
            " const deck = await C.shuffle(C.fromHex(s), c, BigInt(n), d);"
            " return {order: await C.sha256hex(new TextEncoder().encode(deck.join(' '))),"
            " commitment: await C.commitment(C.fromHex(s))}; })()"
        )
        assert order == {"order": vector["order_sha256"], "commitment": vector["commitment"]}, vector["name"]
    seeds = json.loads((ROOT / "tests/core/client_seed_vectors.json").read_text(encoding="utf-8"))
    for vector in seeds["vectors"] if isinstance(seeds, dict) else seeds:
        derived = tab.evaluate(f"PokdengVerify.core.deriveClientSeed({json.dumps(vector['contributions'])})")
        assert derived == vector["client_seed"], vector["name"]
    example = '{"b": [1, true, null], "a": "é\\n", "A": "\\u001f\\"/"}'
    canonical = tab.evaluate(f"PokdengVerify.core.hex(PokdengVerify.core.canonicalBytes({example}))")
    assert canonical == ("7b2241223a225c75303031665c222f222c2261223a22c3a95c6e222c2262223a5b312c747275652c6e756c6c5d7d")
    assert tab.evaluate("PokdengVerify.core.canon({'\\uff61': 2, '\\ud83d\\ude00': 1})") == '{"😀":1,"｡":2}'
    refused = "(() => { try { PokdengVerify.core.canon({a: 1.5}); return ''; } catch (e) { return e.message; } })()"
    assert "outside the canonical domain" in tab.evaluate(refused)


@pytest.mark.parametrize("name", [*PROFILES, "voided"])
def test_the_page_fits_a_phone_and_prints(name: str, store: Store, browser: Browser, tmp_path: Path) -> None:
    path = replay_page(store, name, tmp_path)
    phone = browser.page(WIDTH, 740, mobile=True)
    try:
        phone.open(path)
        phone.verdict()
        width = phone.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width == [WIDTH, WIDTH], f"the page overflows a {WIDTH} px screen: {width}"
        wider = phone.evaluate(
            "Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > "
            f"{WIDTH} + 0.5).map(e => e.tagName + '.' + e.className)"
        )
        assert not wider, wider
        assert phone.evaluate("getComputedStyle(document.getElementById('stepper')).display") != "none"
        phone.media("print")
        assert phone.evaluate("getComputedStyle(document.getElementById('stepper')).display") == "none"
        phone.evaluate("PokdengPage.go(0)")  # on paper the whole round shows, whatever the step on screen
        hidden = phone.evaluate(
            "Array.from(document.querySelectorAll('.card'))"
            ".filter(e => getComputedStyle(e).visibility === 'hidden').length"
        )
        assert hidden == 0
        pdf = phone.pdf()
        assert pdf.startswith(b"%PDF") and len(pdf) > 20_000
    finally:
        phone.close()


def test_the_deal_appears_card_by_card(store: Store, bundles: dict[str, bytes], tab: Page, tmp_path: Path) -> None:
    tab.open(replay_page(store, "kingmaker", tmp_path))
    tab.verdict()
    dealt = next(e for e in json.loads(bundles["kingmaker"])["events"] if e["kind"] == "cards_dealt")
    first = tab.evaluate("Number(document.querySelector('#timeline li[data-kind=cards_dealt]').dataset.first)")
    seen = "Array.from(document.querySelectorAll('.seats .card')).filter(e => !e.classList.contains('future')).length"
    tab.evaluate("PokdengPage.go(0)")
    assert tab.evaluate(seen) == 0
    assert tab.evaluate("document.querySelectorAll('.seats .bet [data-step].future').length") > 0  # no results yet
    for n in range(1, len(dealt["data"]["cards"]) + 1):
        tab.evaluate(f"PokdengPage.go({first + n - 1})")
        assert tab.evaluate(seen) == n, f"after {n} card(s) of the deal"
        assert tab.evaluate("document.querySelector('#timeline li.current').dataset.kind") == "cards_dealt"
    tab.evaluate("document.querySelector('#stepper [data-go=last]').click()")
    assert tab.evaluate("document.querySelectorAll('.future').length") == 0
    tab.evaluate("document.querySelector('#stepper [data-go=first]').click()")
    tab.evaluate("document.querySelector('#stepper [data-go=next]').click()")
    assert tab.evaluate("document.documentElement.dataset.step") == "1"
    assert "opens" in tab.evaluate("document.getElementById('step-now').textContent")


def test_markup_in_a_player_id_is_text_in_the_browser(store: Store, tab: Page, tmp_path: Path) -> None:
    tab.open(replay_page(store, "hostile", tmp_path))
    assert tab.verdict()["ok"]
    assert tab.evaluate("document.images.length") == 0
    assert tab.evaluate("document.querySelectorAll('b').length") == 0
    assert tab.evaluate(f"document.body.textContent.includes({json.dumps(HOSTILE)})")
    assert tab.evaluate("typeof window.alert_called") == "undefined"


def test_odd_ante_limits_fail_the_page_as_they_fail_pokdeng(
    store: Store, bundles: dict[str, bytes], wr: ModuleType, tab: Page, tmp_path: Path
) -> None:
    """An ante round's limits are even (docs/rules.md): an unanchored bundle whose round opened at 101..10000,
    restated alike and every digest recomputed, passed the page and the docs' verifier (pokdeng's replay
    refused it, as the core refuses such a round)."""
    from .. import forgery

    bundle = json.loads(bundles["ante"])
    forgery.unanchored(bundle)
    forgery.event_of(bundle, "round_opened")["data"]["min_stake"] += 1
    next(d for d in bundle["decisions"] if d["command"] == "open_round")["min_stake"] += 1
    forgery.rechain(bundle, wr)
    raw = forgery.redigest(bundle, wr)
    tab.open(bundle_page(raw, tmp_path, ""))  # (no key: nothing outside the bundle vouches for its chain)
    verdict = tab.verdict()
    assert not verdict["ok"] and set(verdict["failed"]) == {"money"}, verdict
    documented = python_verdict(wr, raw, "")
    assert {n for n, ok, _d in documented.checks if not ok} == {"money"}, documented.render()
    edited = tmp_path / "odd.json"
    edited.write_bytes(raw)
    assert main(["verify", "--bundle", str(edited)]) != EXIT_OK
