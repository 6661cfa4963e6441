"""The pages lead with the answer, in headless Chromium at a phone's 390 px and a desktop's 1280 px.

The dispute page: the round, its outcome and the browser's verdict (checking…, then verified, failed or
unanchored, and whether a signed head anchors it) inside the first screen; each stake in one line with its cards,
points, class and why, and its net in the round's currency (read back from the rendered page and compared with the
bundle and ``pokdeng_service.money``); the legend of the game's words and the profile's payouts. The verifier page:
a chosen bundle's table with cards and points; its own shuffle form reproduces docs/shuffle.md's published vectors
(commitment, order digest, derived client seeds) and settles stakes as ``pokdeng_core`` does.

Screenshots of every page at both widths are written to ``$POKDENG_ARTIFACTS`` (default: the test session's
temporary folder, ``.../artifacts``); the test prints where.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pokdeng_core import settle
from pokdeng_core.cards import parse_card
from pokdeng_core.hands import taem
from pokdeng_service import audit
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_OK, main
from pokdeng_service.money import format_money

from .browser import Browser, Page, needs_chromium
from .pages import Store, make_store

pytestmark = [pytest.mark.browser, needs_chromium]
ROOT = Path(__file__).resolve().parents[2]
SCREENS = {"phone": (390, 844, True), "desktop": (1280, 800, False)}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return make_store(tmp_path_factory.mktemp("answer"))


@pytest.fixture(scope="module")
def bundles(store: Store) -> dict[str, dict[str, Any]]:
    service = PartitionedPokdeng.open_read_only(StoreConfig.from_args(db=str(store.db)))
    try:
        return {
            name: json.loads(audit.bundle_bytes(audit.export_bundle(service.apps[0], round_id)))
            for name, round_id in store.rounds.items()
            if name != "open"
        }
    finally:
        service.close()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("POKDENG_ARTIFACTS") or tmp_path_factory.getbasetemp() / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots of the pages: {folder}")
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as chromium:
        yield chromium


def _page(browser: Browser, screen: str) -> Page:
    width, height, mobile = SCREENS[screen]
    return browser.page(width, height, mobile=mobile)


def _hand(bundle: dict[str, Any], seat: int) -> list[str]:
    cards: list[str] = []
    for event in bundle["events"]:
        if event["kind"] == "cards_dealt":
            cards += [c for s, c in event["data"]["cards"] if s == seat]
        elif event["kind"] == "card_drawn" and event["data"]["seat"] == seat:
            cards.append(event["data"]["card"])
    return cards


def _pretty(cards: list[str]) -> str:
    return "".join(parse_card(c).pretty.replace(" ", "") for c in cards)


def _first_screen(tab: Page, selector: str) -> bool:
    return bool(
        tab.evaluate(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
            " return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0; })()"
        )
    )


@pytest.mark.parametrize("screen", SCREENS)
@pytest.mark.parametrize("name", ["classic", "ante", "room", "kingmaker", "late", "voided"])
def test_the_dispute_page_leads_with_the_answer(
    name: str, screen: str, store: Store, bundles: dict[str, dict[str, Any]], browser: Browser, tmp_path: Path,
    artifacts: Path,
) -> None:  # fmt: skip
    page = tmp_path / f"{name}.html"
    keys = ["--key", store.public_key] if name != "late" else []  # (late: no key, so unanchored, not failed)
    assert main(["replay", store.rounds[name], "--db", str(store.db), "--html", str(page), *keys]) == EXIT_OK
    tab = _page(browser, screen)
    try:
        tab.open(page)
        first = tab.evaluate("document.getElementById('answer-verdict').dataset.state")
        assert first in ("checking", "pass", "unanchored")  # (checking… until the browser has checked it)
        tab.verdict()
        state = tab.evaluate("document.getElementById('answer-verdict').dataset.state")
        said = tab.evaluate("document.getElementById('answer-verdict').textContent")
        if name == "late":  # closed after the last signed head: nothing anchors it
            assert state == "unanchored" and said.startswith("Unanchored: every check passed"), said
        else:
            assert state == "pass" and "signed tree head" in said and said.startswith("Verified in this browser")
        for selector in ("#headline .state", "#headline h1", "#answer-verdict"):
            assert _first_screen(tab, selector), f"{selector} is not in the first screen at {screen}"
        headline = tab.evaluate("document.getElementById('headline').innerText")
        bundle = bundles[name]
        assert bundle["round_id"] in headline
        assert ("VOIDED" if name == "voided" else "SETTLED") in headline
        width = tab.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width[0] == width[1], f"the page overflows at {screen}: {width}"
        lines = tab.evaluate(
            "Array.from(document.querySelectorAll('#answer .line'), li => [li.dataset.seat, li.dataset.player,"
            " li.textContent.replace(/\\s+/g, ' ').trim()])"
        )
        currency = next(e for e in bundle["events"] if e["kind"] == "round_opened")["data"].get("currency", "THB")
        banker = _hand(bundle, 0)
        assert lines and lines[0][0] == "0" and lines[0][2].startswith("Banker")
        assert f" {taem([parse_card(c) for c in banker])}" in lines[0][2]
        for payout in bundle["payouts"]:
            cards = _hand(bundle, payout["seat"])
            (line,) = [t for seat, player, t in lines if seat == str(payout["seat"]) and player == payout["player"]]
            assert line, (payout, lines)
            assert _pretty(cards) in line.replace(" ", ""), (cards, line)
            assert str(taem([parse_card(c) for c in cards])) in line
            net = format_money(payout["net"], currency, signed=True)
            assert line.rstrip().split("→ ")[1].startswith(net), (net, line)
            verb = {"player_wins": "beats the banker's", "banker_wins": "to the banker's", "tie": "ties the banker's"}
            assert verb[payout["outcome"]] in line
            if payout["commission"]:
                assert f"(commission {format_money(payout['commission'], currency)} taken)" in line
        legend = tab.evaluate("document.getElementById('legend').innerText")
        for word in ("taem", "pok", "deng", "sam lueang", "tong"):
            assert word in legend
        (artifacts / f"dispute-{name}-{screen}.png").write_bytes(tab.screenshot())
        assert not tab.errors()
    finally:
        tab.close()


@pytest.mark.parametrize("screen", SCREENS)
def test_the_verifier_page_shows_the_rounds_table_and_its_verdict_first(
    screen: str, store: Store, bundles: dict[str, dict[str, Any]], browser: Browser, tmp_path: Path,
    artifacts: Path,
) -> None:  # fmt: skip
    out = tmp_path / "verifier.html"
    assert main(["verifier-page", str(out), "--key", store.public_key]) == EXIT_OK
    tab = _page(browser, screen)
    try:
        tab.open(out)
        chosen = tmp_path / "kingmaker.json"
        bundle = bundles["kingmaker"]
        service = _service(store)
        try:
            chosen.write_bytes(audit.bundle_bytes(audit.export_bundle(service.apps[0], store.rounds["kingmaker"])))
        finally:
            service.close()
        tab.set_file("#bundle-file", chosen)
        assert tab.verdict()["ok"]
        assert tab.evaluate("document.getElementById('answer-verdict').dataset.state") == "pass"
        assert _first_screen(tab, "#answer-verdict")
        rows = tab.evaluate(
            "Array.from(document.querySelectorAll('#payouts tbody tr'), tr => Object.fromEntries("
            "Array.from(tr.cells, c => [c.dataset.label, c.textContent])))"
        )
        assert len(rows) == len(bundle["payouts"])
        for row, payout in zip(rows, bundle["payouts"], strict=True):
            cards = _hand(bundle, payout["seat"])
            assert row["Cards"] == " ".join(cards)
            assert row["Points"] == str(taem([parse_card(c) for c in cards]))
            assert row["Stake"] == format_money(payout["stake"], "THB")
            assert row["Net"] == format_money(payout["net"], "THB", signed=True)
        (artifacts / f"verifier-{screen}.png").write_bytes(tab.screenshot())
    finally:
        tab.close()


def _service(store: Store) -> Any:
    return PartitionedPokdeng.open_read_only(StoreConfig.from_args(db=str(store.db)))


def _fill(tab: Page, **fields: str) -> None:
    for name, value in fields.items():
        tab.evaluate(f"document.getElementById('play-form').elements[{json.dumps(name)}].value = {json.dumps(value)}")
    tab.evaluate("document.documentElement.dataset.play = ''")
    tab.evaluate("document.querySelector('#play-form button[type=submit]').click()")
    assert tab.wait_for("document.documentElement.dataset.play") == "done", tab.evaluate(
        "document.getElementById('play-status').textContent"
    )


def test_the_verifier_pages_shuffle_reproduces_the_published_vectors(
    browser: Browser, tmp_path: Path, artifacts: Path
) -> None:
    out = tmp_path / "verifier.html"
    assert main(["verifier-page", str(out)]) == EXIT_OK
    tab = _page(browser, "phone")
    try:
        tab.open(out)
        vectors = json.loads((ROOT / "tests/core/shuffle_vectors.json").read_text(encoding="utf-8"))
        for vector in vectors["vectors"] if isinstance(vectors, dict) else vectors:
            _fill(
                tab,
                server_seed=vector["server_seed_hex"],
                client_seed=vector["client_seed"],
                contributions="",
                nonce=str(vector["nonce"]),
                decks=str(vector["decks"]),
                stakes="",
            )
            assert tab.evaluate("document.getElementById('play-commitment').textContent") == vector["commitment"]
            assert tab.evaluate("document.getElementById('play-digest').textContent") == vector["order_sha256"]
        seeds = json.loads((ROOT / "tests/core/client_seed_vectors.json").read_text(encoding="utf-8"))
        for vector in seeds["vectors"] if isinstance(seeds, dict) else seeds:
            if any("\n" in c or "\n" in s or ": " in c for c, s in vector["contributions"]):
                continue  # (a contribution the form's one-a-line text cannot hold)
            if not vector["contributions"]:
                continue
            lines = "\n".join(f"{c}: {s}" for c, s in vector["contributions"])
            _fill(tab, server_seed="00" * 32, contributions=lines, nonce="0", decks="1")
            shown = tab.evaluate("document.getElementById('play-client').textContent")
            assert shown.startswith(vector["client_seed"] + " (derived"), vector["name"]
        # docs/shuffle.md section 13's worked example: three contributions, server seed 00..1f, nonce 12
        _fill(
            tab,
            server_seed=bytes(range(32)).hex(),
            contributions="bob: 🎲 roll\nalice: lucky-7\n: table 9 round 12",
            nonce="12",
            decks="1",
            profile="kingmaker",
            currency="THB",
            stakes="1000, 500",
            seats="2",
        )
        digest = tab.evaluate("document.getElementById('play-digest').textContent")
        assert digest == "a5bf535b470d19d191ca06a4bf326c6a1f71945176e388a99063daba2aaba137"
        shoe = tab.evaluate("document.getElementById('play-shoe').textContent").split()
        rows = tab.evaluate(
            "Array.from(document.querySelectorAll('#play-seats-table tbody tr'), tr => Object.fromEntries("
            "Array.from(tr.cells, c => [c.dataset.label, c.textContent])))"
        )
        seats = 2  # one card to each seat in seat order, the banker last, twice
        hands = {s: [shoe[s - 1], shoe[seats + 1 + s - 1]] for s in range(1, seats + 1)}
        banker = [shoe[seats], shoe[2 * seats + 1]]
        assert rows[0]["Cards"] == " ".join(banker)
        for seat, stake in ((1, 1000), (2, 500)):
            row = rows[seat]
            assert row["Cards"] == " ".join(hands[seat])
            assert row["Points"] == str(taem([parse_card(c) for c in hands[seat]]))
            settled = settle("kingmaker", player=" ".join(hands[seat]), banker=" ".join(banker), stake=stake)
            assert row["Net"] == format_money(settled.player_net, "THB", signed=True)
            assert row["Stake"] == format_money(stake, "THB")
        (artifacts / "verifier-shuffle-phone.png").write_bytes(tab.screenshot())
        assert not tab.errors()
    finally:
        tab.close()
