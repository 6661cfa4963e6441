"""A store for the dispute page's tests: rounds of every profile, a void, hostile player ids, a signed head.

``make_store(folder)`` plays into an SQLite file (with a signing key file beside it, as ``pokdeng keys
new`` makes) and returns what it played; the tests write pages from it with the ``pokdeng`` command.
``Edits`` changes a bundle the way a forger would (docs/audit.md's checks name what each edit breaks),
with the documentation's own verifier (docs/examples/worked_round.py) to recompute digests.
"""

from __future__ import annotations

import importlib.util
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from pokdeng_core.round_state import Phase
from pokdeng_service.application.commands import StartRound
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.application.principal import Principal, Role
from pokdeng_service.application.round_commands import (
    BankerDraw,
    BankerStay,
    ContributeSeed,
    Deal,
    Draw,
    PlaceBet,
    Stay,
    VoidRound,
)
from pokdeng_service.store.signing import KeyRing

from .. import forgery
from ..service import play

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "<img src=x onerror=alert(1)>"  # a player id holding markup
CARDLIKE = "A♠"  # a player id that looks like a card
DESK = Principal(Role.OPERATOR, name="desk-7")


@dataclass
class Store:
    db: Path
    public_key: str  # hex
    rounds: dict[str, str] = field(default_factory=dict)  # profile (or "voided", "hostile", "late") -> round id


def _profile_round(d: play.Driver, profile: str) -> str:
    table = f"{profile}-t"
    names = [f"{profile}-p{i}" for i in range(1, 4)]
    play.open_wallets(d, names)
    if profile == "ante":
        play.open_table(d, table, profile, min_stake=100, max_stake=1000)
    elif profile == "room":
        banker = f"{table}-banker"
        play.open_wallets(d, [banker], 10_000_000)
        play.open_table(d, table, profile, [(1, names[0]), (2, names[1]), (3, banker)])
        play.hold_banker_bid(d, table, [(banker, 10), (names[0], 0), (names[1], 0)])
    else:
        play.open_table(d, table, profile, [(i + 1, n) for i, n in enumerate(names)])
    round_id = play.start_round(d, table, "platform-seed")
    if profile == "ante":
        play.place_bets(d, round_id, [(1, names[0], 200), (3, names[1], 400), (3, names[2], 200)])
    else:
        play.seat_bets(d, round_id, 200)
    play.drive_round(d, round_id)
    return round_id


def _desk_round(app: Any) -> str:
    """A classic round of ``classic-t`` (the house banks) where desk-7 places seat 2's stake and plays its
    hand and the house's, and the platform's contribution, while seats 1 and 3 play their own: until the
    banker and seats 1 and 2 each chose (a pok chooses nothing)."""
    own = {seat: Principal(Role.PLAYER, f"classic-p{seat}") for seat in (1, 3)}
    for n in range(20):
        round_id: str = app.handle(DESK, f"desk-start-{n}", StartRound("classic-t")).id
        for seat in (1, 2, 3):
            app.handle(own.get(seat, DESK), f"desk-bet-{n}-{seat}", PlaceBet(round_id, seat, f"classic-p{seat}", 100))
        app.handle(DESK, f"desk-seed-{n}", ContributeSeed(round_id, None, "the desk's seed"))
        app.handle(DESK, f"desk-deal-{n}", Deal(round_id))
        chose: set[int] = set()
        for i in range(10):
            state = app.round_state(round_id)
            if state.phase is Phase.PLAYER_TURNS:
                seat, holder = state.turn, state.holder(state.turn)
                command = (Draw if i % 2 else Stay)(round_id, seat, holder)
                app.handle(own.get(seat, DESK), f"desk-turn-{n}-{i}", command)
                chose.add(seat)
            elif state.phase is Phase.BANKER_TURN:
                app.handle(DESK, f"desk-banker-{n}", (BankerDraw if n % 2 else BankerStay)(round_id))
                chose.add(0)
        assert app.round_state(round_id).phase is Phase.CLOSED
        if {0, 1, 2} <= chose:
            return round_id
    raise AssertionError("no round of 20 had the choices")


def make_store(folder: Path) -> Store:
    db = folder / "pages.sqlite"
    config = StoreConfig.from_args(db=str(db))
    ring = KeyRing()
    key = ring.rotate()
    ring.save(config.signing_key_path(), new=True)
    store = Store(db, key.public.hex())
    service = PartitionedPokdeng.open(config)
    app = service.apps[0]
    try:
        d = play.Driver(app, chooser=play.Chooser(random.Random(5), side_bet=1.0, timeout=0.2))
        for profile in play.PROFILES:
            store.rounds[profile] = _profile_round(d, profile)
        play.open_wallets(d, [HOSTILE, CARDLIKE])
        play.open_table(d, "odd", "classic", [(1, HOSTILE), (2, CARDLIKE)])
        store.rounds["hostile"] = play.start_round(d, "odd", "</script><b>seed</b>")
        play.seat_bets(d, store.rounds["hostile"], 100)
        play.drive_round(d, store.rounds["hostile"])
        voided = ""
        for n in range(20):  # voided after its deal: its cards are on the record, nothing is paid
            voided = app.handle(DESK, f"start-by-desk-{n}", StartRound("classic-t")).id  # (started, dealt by desk-7)
            play.seat_bets(d, voided, 100)
            app.handle(DESK, f"deal-by-desk-{n}", Deal(voided))
            if app.round_state(voided).phase is not Phase.CLOSED:
                break
        app.handle(DESK, "void-by-desk", VoidRound(voided, "a card fell face up <b>on the floor</b>"))
        store.rounds["voided"] = voided
        store.rounds["desk"] = _desk_round(app)
        d.call("sign_tree_head")
        store.rounds["late"] = play.start_round(d, "kingmaker-t")  # closed after the head: unanchored
        play.seat_bets(d, store.rounds["late"], 100)
        play.drive_round(d, store.rounds["late"])
        store.rounds["open"] = play.start_round(d, "ante-t")
        play.place_bets(d, store.rounds["open"], [(2, "ante-p1", 200)])
    finally:
        service.close()
    return store


def worked_round() -> ModuleType:
    """docs/examples/worked_round.py: the verifier written from the documentation alone."""
    spec = importlib.util.spec_from_file_location("worked_round_for_pages", ROOT / "docs/examples/worked_round.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


Edit = Callable[[bytes, ModuleType], bytes]


def _other_card(text: str) -> str:
    return ("2" if not text.startswith("2") else "3") + text[-1]


def _card(bundle: dict[str, Any]) -> None:
    cards = forgery.event_of(bundle, "cards_dealt")["data"]["cards"]
    cards[0][1] = _other_card(cards[0][1])


def _amount(bundle: dict[str, Any]) -> None:
    forgery.event_of(bundle, "bet_settled")["data"]["net"] += 1


def json_edit(change: Callable[[dict[str, Any]], None], *, rechain: bool = False) -> Edit:
    def edit(raw: bytes, wr: ModuleType) -> bytes:
        bundle = json.loads(raw)
        change(bundle)
        if rechain:
            forgery.rechain(bundle, wr)
        return forgery.redigest(bundle, wr)

    return edit


def _in_file(raw: bytes, _wr: ModuleType) -> bytes:
    """A card changed in the file itself, nothing recomputed."""
    bundle = json.loads(raw)
    seat, card = forgery.event_of(bundle, "cards_dealt")["data"]["cards"][0]
    old = f'"cards":[[{seat},"{card}"]'.encode()
    assert old in raw
    return raw.replace(old, f'"cards":[[{seat},"{_other_card(card)}"]'.encode(), 1)


def _swap_the_last_card(bundle: dict[str, Any]) -> None:
    """The last card swapped with the nearest one before it that differs (a shoe of several decks may hold
    the same card twice in a row: swapping those would change nothing)."""
    deck = bundle["shuffle"]["deck_order"]
    other = next(k for k in range(len(deck) - 2, -1, -1) if deck[k] != deck[-1])
    deck[-1], deck[other] = deck[other], deck[-1]


def _set(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(bundle: dict[str, Any]) -> None:
        target: Any = bundle
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return change


# name: (the edit, the checks that must fail)
EDITS: dict[str, tuple[Edit, set[str]]] = {
    "a card in the file": (_in_file, {"bundle digest", "chain", "cards"}),
    "a card, re-digested": (json_edit(_card), {"chain", "cards"}),
    "a card, every digest recomputed": (json_edit(_card, rechain=True), {"cards", "log inclusion"}),
    "an amount, every digest recomputed": (json_edit(_amount, rechain=True), {"money", "log inclusion"}),
    "a stored digest": (json_edit(_set("events", 4, "digest", value="0" * 64)), {"chain"}),
    "the bundle digest": (json_edit(lambda b: None), set()),  # (replaced below: a digest that is not the body's)
    "a balance": (json_edit(_set("balances", 0, "after", value=1)), {"balances"}),
    "the server seed": (json_edit(_set("shuffle", "server_seed", value="00" * 32)), {"commitment"}),
    "the deck order": (json_edit(_swap_the_last_card), {"shuffle"}),
    "the head's signature": (json_edit(_set("log", "head", "signature", value="00" * 64)), {"anchor"}),
}


def _bad_digest(raw: bytes, wr: ModuleType) -> bytes:
    bundle = json.loads(raw)
    bundle["bundle_digest"] = "f" * 64
    return bytes(wr.canonical(bundle)) + b"\n"


EDITS["the bundle digest"] = (_bad_digest, {"bundle digest"})


def _ride_along(name: str) -> Edit:
    return lambda raw, wr: forgery.ride_along(raw, wr, name)


# what a forger could add that no check read (tests/forgery.py): here, with no checkpoint, no inclusion
EDITS.update(
    {
        name: (_ride_along(name), set())
        for name in forgery.RIDE_ALONG
        if "inclusion" not in name and "checkpoint" not in name
    }
)


def _restated(name: str) -> Edit:
    return lambda raw, wr: forgery.restated(raw, wr, name)


# what a bundle restates, compared whole (tests/forgery.py): the page passed these where `pokdeng verify` refused
EDITS.update({name: (_restated(name), {case.check}) for name, case in forgery.RESTATED.items()})
