"""``pokdeng replay ROUND --html FILE``: the dispute page, as HTML (its browser side: test_browser_pages.py).

The page is one file: the table (banker and seats, card faces, points, hands, multipliers as 0.95×,
stakes, side bets, commission, nets, balances before and after), the headline (SETTLED, VOIDED by whom
and why, IN PLAY), the timeline with full UTC times and who acted, the seeds, the chain, pokdeng's
verdict, and the round's bundle byte for byte with the scripts that check it in the browser.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_OK, EXIT_USAGE, main

from ..service import play
from .pages import CARDLIKE, HOSTILE, Store, make_store

LEGACY = Path(__file__).resolve().parents[1] / "service" / "legacy"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return make_store(tmp_path_factory.mktemp("pages"))


def page(store: Store, name: str, folder: Path, *extra: str, code: int = EXIT_OK) -> str:
    out = folder / f"{name}.html"
    assert main(["replay", store.rounds[name], "--db", str(store.db), "--html", str(out), *extra]) == code
    return out.read_text(encoding="utf-8")


@contextlib.contextmanager
def _two_seats(db: Path) -> Iterator[tuple[PartitionedPokdeng, play.Driver]]:
    """A fresh store with ann and bob seated at classic table ``t``, and a driver for it."""
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db)))
    try:
        d = play.Driver(service.apps[0])
        play.open_wallets(d, ["ann", "bob"])
        play.open_table(d, "t", "classic", [(1, "ann"), (2, "bob")])
        yield service, d
    finally:
        service.close()


def visible(text: str) -> str:
    """The page's text outside tags, scripts and styles, unescaped."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", text, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def test_the_page_carries_the_exported_bundle_byte_for_byte(store: Store, tmp_path: Path) -> None:
    text = page(store, "kingmaker", tmp_path, "--key", store.public_key)
    exported = tmp_path / "round.json"
    assert main(["export", store.rounds["kingmaker"], "--db", str(store.db), "-o", str(exported)]) == EXIT_OK
    (encoded,) = re.findall(r'data-bundle="([A-Za-z0-9+/=]+)"', text)
    assert base64.b64decode(encoded) == exported.read_bytes()
    assert f'data-keys="{store.public_key}"' in text


def test_the_page_is_one_file_that_fetches_nothing(store: Store, tmp_path: Path) -> None:
    text = page(store, "classic", tmp_path)
    assert text.startswith("<!doctype html>")
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    assert "Content-Security-Policy" in text and "default-src 'none'" in text and "connect-src 'none'" in text
    assert not re.search(r"<(script|img|link|iframe)[^>]*\b(src|href)=", text), "the page loads something"
    assert "http://" not in text and "https://" not in text
    assert text.count("<script>") == 1 and "PokdengVerify" in text and "crypto" in text


def test_the_table_shows_who_won_what_and_why(store: Store, tmp_path: Path) -> None:
    text = page(store, "kingmaker", tmp_path)
    shown = visible(text)
    assert "SETTLED" in shown and "Banker · the house" in shown
    for seat in (1, 2, 3):
        assert f"Seat {seat} · kingmaker-p{seat}" in shown
    assert re.search(r"\d points? \([a-z ]+\) against the banker's \d points? \([a-z ]+\)", shown), shown
    for label in ("Stake", "Reserved", "Result", "Multiplier", "Gross", "Commission", "Net", "Balance"):
        assert label in shown
    before_after = r"THB 10,000\.00 → THB 10,0\d\d\.\d\d|THB 10,000\.00 → THB 9,9\d\d\.\d\d"
    assert re.search(before_after, shown), "balances before and after, in the round's currency"
    assert "19/20" not in shown and "x19" not in shown  # multipliers as a person reads them
    assert re.search(r"\b0\.95×|\b[1-5]×", shown)
    assert 'class="card' in text and any(suit in shown for suit in "♠♥♣♦")


def test_times_are_full_utc_and_every_step_names_who_acted(store: Store, tmp_path: Path) -> None:
    shown = visible(page(store, "room", tmp_path))
    times = re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{6})? UTC", shown)
    assert len(times) >= 10, "dates, times and the zone"
    # the start and the deal name their sender (the service itself here: play.Driver sends as SYSTEM)
    for kind in ("round_opened", "shuffle_committed", "client_seed_fixed", "cards_dealt"):
        assert re.search(rf"{kind}\s+by service:system", shown), kind
    assert "by service:system for room-p1" in shown  # (its players' decisions too, sent for them)
    assert "operator (start round)" not in shown and "operator (deal)" not in shown
    for word in ("Commitment", "Server seed", "Client seed", "Nonce", "Chain start", "Chain end", "Bundle digest"):
        assert word in shown
    assert "Checked by pokdeng against the store" in shown and "Checked in this browser" in shown


def test_decisions_sent_for_a_player_or_the_house_name_their_sender(store: Store, tmp_path: Path) -> None:
    """desk-7 staked and played seat 2 and the house's hand, and contributed for the platform; seats 1 and
    3 played their own (docs/events.md, "Who sent a command")."""
    shown = visible(page(store, "desk", tmp_path))
    assert re.search(r"bet_placed\s+by operator:desk-7 for classic-p2\b", shown)
    assert re.search(r"bet_placed\s+by classic-p1\b", shown) and re.search(r"bet_placed\s+by classic-p3\b", shown)
    assert re.search(r"client_seed_contributed\s+by operator:desk-7 for the platform\b", shown)
    assert re.search(r"(card_drawn|player_stood)\s+by operator:desk-7 for classic-p2\b", shown)
    assert re.search(r"(card_drawn|player_stood)\s+by classic-p1\b", shown)
    assert re.search(r"(card_drawn|player_stood)\s+by operator:desk-7 for the house\b", shown)
    assert "for classic-p1" not in shown and "for classic-p3" not in shown


def test_the_terminal_replay_names_every_recorded_sender(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    """``pokdeng replay ROUND`` (text): each event with a ``by`` says it, not only timeouts and voids."""
    assert main(["replay", store.rounds["desk"], "--db", str(store.db)]) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    sent = [line for line in lines if line.endswith(" — by operator:desk-7")]
    assert any("opens:" in line for line in sent) and any(
        line.lstrip().startswith("#") and "deal —" in line for line in sent
    )
    assert any("classic-p2 stakes" in line for line in sent) and any(
        "the platform contributes" in line for line in sent
    )
    assert any("seat 2 (classic-p2)" in line and "(choice)" in line for line in sent)
    assert any("banker (house)" in line and "(choice)" in line for line in sent)
    played = [line for line in sent if "opens:" not in line and ("stakes" in line or "(choice)" in line)]
    assert not any("classic-p1" in line or "classic-p3" in line for line in played)  # (they played their own)
    assert any("classic-p1 stakes" in line and " — by " not in line for line in lines)  # (its own)


def test_a_voided_round_says_by_whom_and_why(store: Store, tmp_path: Path) -> None:
    text = page(store, "voided", tmp_path)
    assert 'class="headline voided"' in text
    shown = visible(text)
    assert "VOIDED by operator:desk-7" in shown and "SETTLED" not in shown
    for kind in ("round_opened", "contributions_opened", "shuffle_committed", "client_seed_fixed", "cards_dealt"):
        assert re.search(rf"{kind}\s+by operator:desk-7", shown), kind  # desk-7 started and dealt it too
    assert "a card fell face up <b>on the floor</b>" in shown  # the reason, as text
    assert "<b>on the floor</b>" not in text  # (escaped, never markup)
    assert "no money moved" in shown


def test_a_round_closed_after_the_last_head_says_unanchored(store: Store, tmp_path: Path) -> None:
    shown = visible(page(store, "late", tmp_path))
    assert "unanchored" in shown


def test_an_open_round_has_a_page_without_a_bundle(store: Store, tmp_path: Path) -> None:
    text = page(store, "open", tmp_path)  # (nothing is settled yet: no fault of its record)
    assert 'class="headline open"' in text and "IN PLAY" in visible(text)
    assert "data-bundle=" not in text and "(secret until the round closes)" in text


def test_every_value_is_escaped(store: Store, tmp_path: Path) -> None:
    text = page(store, "hostile", tmp_path)
    assert HOSTILE not in text and html.escape(HOSTILE) in text
    assert "</script><b>seed</b>" not in text and "&lt;/script&gt;&lt;b&gt;seed&lt;/b&gt;" in text
    shown = visible(text)
    assert f"Seat 1 · {HOSTILE}" in shown and f"Seat 2 · {CARDLIKE}" in shown
    # the player who looks like a card is text: its seat shows as many card faces as it was dealt and drew
    seat = re.search(r'<article class="seat[^"]*" id="seat-2">(.*?)</article>', text, flags=re.S)
    assert seat is not None
    heading = re.search(r"<h3>Seat 2 · (.*?)</h3>", seat.group(1))
    assert heading is not None and heading.group(1) == CARDLIKE
    bundle = json.loads(base64.b64decode(re.findall(r'data-bundle="([A-Za-z0-9+/=]+)"', text)[0]))
    held = next(c for e in bundle["events"] if e["kind"] == "hands_revealed" for s, c in e["data"]["hands"] if s == 2)
    assert seat.group(1).count('<span class="card') == len(held)


def test_the_verifier_page(tmp_path: Path, store: Store) -> None:
    out = tmp_path / "verifier.html"
    assert main(["verifier-page", str(out), "--key", store.public_key]) == EXIT_OK
    text = out.read_text(encoding="utf-8")
    assert 'type="file"' in text and store.public_key in text and "PokdengVerify" in text
    assert "http://" not in text and "https://" not in text


def test_a_round_recorded_before_the_start_and_deal_named_their_sender() -> None:
    """A bundle of engine 1.0.0 (no ``by`` in round_opened or cards_dealt): its steps say operator."""
    from pokdeng_service.web import model

    bundle = json.loads((LEGACY / "kingmaker-settled-1.0.0.json").read_bytes())
    opened = next(e for e in bundle["events"] if e["kind"] == "round_opened")
    dealt = next(e for e in bundle["events"] if e["kind"] == "cards_dealt")
    assert "by" not in opened["data"] and "by" not in dealt["data"]
    who = {s.kind: s.who for s in model.build(bundle["events"], bundle).steps}
    assert who["round_opened"] == who["shuffle_committed"] == "operator (start round)"
    assert who["cards_dealt"] == "operator (deal)"


def test_a_round_recorded_before_decisions_named_their_sender() -> None:
    """The worked example as published before ``by`` in the players' and the banker's events: its bets,
    contributions and choices name the player (or the house), with no sender; its start and deal do not."""
    from pokdeng_service.web import model

    bundle = json.loads((LEGACY / "worked-round-1.1.0.json").read_bytes())
    who = [(s.kind, s.who) for s in model.build(bundle["events"], bundle).steps]
    assert who[3:12] == [
        ("client_seed_contributed", "the platform"),
        ("bet_placed", "ann"),
        ("client_seed_contributed", "ann"),
        ("bet_placed", "bob"),
        ("client_seed_contributed", "bob"),
        ("client_seed_fixed", "operator (deal)"),
        ("cards_dealt", "operator (deal)"),
        ("card_drawn", "ann"),
        ("player_stood", "bob"),
    ]
    assert who[12] == ("card_drawn", "the house")


def test_an_open_round_s_page_shows_only_what_the_table_shows(tmp_path: Path) -> None:
    """Found from the outside: the page of a round in play showed every dealt card and every digest (with
    which anyone can try the 52 cards until one matches), and a closed round's page every wallet's balances.
    Now an open round's page shows what the table shows (and ``--player``'s own hand), with the digests from
    the deal on withheld; ``--player`` makes a closed round's page from the player's own bundle."""
    from pokdeng_core.round_state import Phase

    db = tmp_path / "open.sqlite"
    with _two_seats(db) as (service, d):
        closed = play.start_round(d, "t")
        play.seat_bets(d, closed, 100)
        play.drive_round(d, closed)
        for _ in range(20):
            round_id = play.start_round(d, "t")
            play.seat_bets(d, round_id, 100)
            if play.drive_until(d, round_id, Phase.PLAYER_TURNS):
                view = service.apps[0].get_round(round_id)
                if not any(h.revealed for h in view.hands) and not any(e.kind == "pok_declared" for e in view.events):
                    break
            play.drive_round(d, round_id)
        else:
            raise AssertionError("no round of 20 stopped in the players' turns with no hand shown (no pok)")
        hands = {h.seat: h.cards for h in view.hands}
        digests = [e.digest for e in view.events if e.kind == "cards_dealt"]

    def made(round_id: str, *extra: str) -> str:
        out = tmp_path / "page.html"
        assert main(["replay", round_id, "--db", str(db), "--html", str(out), *extra]) == EXIT_OK
        return out.read_text(encoding="utf-8")

    def faces(text: str, seat: int) -> str:
        found = re.search(rf'<article class="seat[^"]*" id="seat-{seat}">(.*?)</article>', text, flags=re.S)
        assert found is not None
        return found.group(1)

    spectator = made(round_id)
    assert digests and all(digest not in spectator for digest in digests)
    ann = made(round_id, "--player", "ann")
    assert all(digest not in ann for digest in digests)
    for seat in (1, 2, 0):
        for card in hands[seat]:
            assert f'title="{card}' not in faces(spectator, seat)
    assert all(f'title="{card}' in faces(ann, 1) for card in hands[1])
    assert not any(f'title="{card}' in faces(ann, 2) for card in hands[2])
    staff, mine = made(closed), made(closed, "--player", "ann")
    bundle = json.loads(base64.b64decode(re.findall(r'data-bundle="([A-Za-z0-9+/=]+)"', mine)[0]))
    assert [b["wallet"] for b in bundle["balances"]] == ["ann"]
    staff_bundle = json.loads(base64.b64decode(re.findall(r'data-bundle="([A-Za-z0-9+/=]+)"', staff)[0]))
    assert sorted(b["wallet"] for b in staff_bundle["balances"]) == ["ann", "bob"]
    out = tmp_path / "nobody.html"
    assert main(["replay", closed, "--db", str(db), "--html", str(out), "--player", "carl"]) == EXIT_USAGE


def test_the_page_runs_its_own_script_alone(store: Store, tmp_path: Path) -> None:
    """The policy names the SHA-256 of the page's one script (no ``'unsafe-inline'`` for scripts): text that
    escaped into the page could not run."""
    import hashlib

    text = page(store, "classic", tmp_path)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert policy is not None
    script_src = next(p for p in html.unescape(policy.group(1)).split(";") if p.strip().startswith("script-src"))
    assert "unsafe-inline" not in script_src
    (body,) = re.findall(r"<script>(.*?)</script>", text, flags=re.S)
    digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
    assert script_src.split() == ["script-src", f"'sha256-{digest}'"]


def test_a_seed_that_would_reorder_the_page_is_shown_escaped(tmp_path: Path) -> None:
    """Found from the outside: a player's contribution to the client seed (any text: docs/shuffle.md) with a
    bidi override (U+202E) or a NUL was written into the page's seeds list as it was, where the browser drew
    it reversed ("... bob wins +1,000,000"); the timeline quoted it. Both now quote text that does not print."""
    spoof = "lucky\u202e 000,000,1+ tiw bob\u202c\x00"
    db = tmp_path / "seed.sqlite"
    with _two_seats(db) as (_service, d):
        round_id = play.start_round(d, "t", "plain seed")
        play.seat_bets(d, round_id, 100)
        d.call("contribute_seed", round_id, "bob", spoof)
        play.drive_round(d, round_id)
    out = tmp_path / "seed.html"
    assert main(["replay", round_id, "--db", str(db), "--html", str(out)]) == EXIT_OK
    text = out.read_text(encoding="utf-8")
    body = re.sub(r'data-bundle="[^"]*"', "", text)  # (the bundle itself carries the seed, base64)
    assert "\u202e" not in body and "\x00" not in body and "\u202c" not in body
    assert repr(spoof) in visible(body)
    assert "plain seed" in visible(text)  # (text that prints is shown as it is)
