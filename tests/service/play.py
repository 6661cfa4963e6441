"""Drive the pokdeng application in service tests: wallets, tables of each profile, whole rounds.

Everything goes through ``PokdengApp``'s public commands and queries. A ``Driver`` wraps an
app: it makes request ids (``<prefix>-<n>``), logs every command it issued (name, request id,
arguments, result) so that tests can repeat them, and makes the round's choices from a seeded
``random.Random`` (or from a ``Chooser`` a test hands it).

``drive_round`` plays a round to its close using only ``app.legal_commands(round_id, seat)``
and ``app.round_state(round_id)``: deal when betting, side bets while the window is open,
the holder's draw/stay on its turn, the banker's reveal/draw/stay on the banker's turn.

Money: ``Ledger`` snapshots every wallet's balance and every table's house_net and
commission; ``Ledger.assert_balanced`` checks that the wallets' changes plus the tables'
house_net and commission changes add up to zero, and that nothing stays reserved.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pokdeng_core.round_state import BANKER, Phase, RoundState
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.views import CommandResult, RoundView
from pokdeng_service.store.signing import KeyRing, SigningKey
from pokdeng_service.store.vault import SeedVault
from pokdeng_testkit.keys import SIGNING_KEY as SIGNING_KEY
from pokdeng_testkit.keys import VAULT_KEY as VAULT_KEY  # every app instance of a test opens the sealed seeds

FUNDS = 1_000_000
MAX_STEPS = 200  # commands per round, far above any real round

PROFILES = ("classic", "ante", "room", "kingmaker")


def vault() -> SeedVault:
    return SeedVault.from_hex(VAULT_KEY)


def signing_keys() -> KeyRing:
    return KeyRing.of(SigningKey.from_hex(SIGNING_KEY))


def make_app(env: dict[str, str], **extra: str) -> PokdengApp:
    return PokdengApp({**env, **extra}, vault=vault(), signing_keys=signing_keys())


@dataclass(frozen=True)
class Call:
    """One command the driver issued, and what the application answered."""

    command: str
    request_id: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    result: CommandResult

    def repeat(self, app: PokdengApp) -> CommandResult:
        result: CommandResult = getattr(app, self.command)(self.request_id, *self.args, **self.kwargs)
        return result


class Chooser:
    """The round's choices: random from a seeded generator unless a subclass decides otherwise."""

    def __init__(
        self,
        rng: random.Random | None = None,
        *,
        draw: float = 0.5,
        side_bet: float = 0.5,
        reveal: float = 0.5,
        timeout: float = 0.0,
    ) -> None:
        self.rng = rng or random.Random(0)
        self.p_draw = draw
        self.p_side_bet = side_bet
        self.p_reveal = reveal
        self.p_timeout = timeout

    def timeout(self, state: RoundState) -> bool:
        return self.rng.random() < self.p_timeout

    def player_draws(self, state: RoundState, seat: int) -> bool:
        return self.rng.random() < self.p_draw

    def side_bet(self, state: RoundState, seat: int) -> bool:
        return self.rng.random() < self.p_side_bet

    def reveal(self, state: RoundState) -> tuple[int, ...]:
        """Seats the banker reveals first (empty: no selective reveal)."""
        waiting = [s for s in state.in_play if s not in state.revealed]
        if len(waiting) < 2 or self.rng.random() >= self.p_reveal:
            return ()
        return tuple(sorted(self.rng.sample(waiting, self.rng.randint(1, len(waiting) - 1))))

    def banker_draws(self, state: RoundState) -> bool:
        return self.rng.random() < self.p_draw


@dataclass
class Driver:
    app: PokdengApp
    prefix: str = "req"
    chooser: Chooser = field(default_factory=Chooser)
    log: list[Call] = field(default_factory=list)
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    after_call: Callable[[Call], None] | None = None

    def next_id(self) -> str:
        return f"{self.prefix}-{next(self.counter)}"

    def call(self, command: str, *args: Any, **kwargs: Any) -> CommandResult:
        request_id = self.next_id()
        result: CommandResult = getattr(self.app, command)(request_id, *args, **kwargs)
        entry = Call(command, request_id, args, kwargs, result)
        self.log.append(entry)
        if self.after_call is not None:
            self.after_call(entry)
        return result

    def commands_used(self) -> set[str]:
        return {c.command for c in self.log}


# --- wallets and tables ---------------------------------------------------------------------


def open_wallets(d: Driver, names: Iterable[str], amount: int = FUNDS) -> None:
    for name in names:
        d.call("open_wallet", name)
        if amount:
            d.call("deposit", name, amount)


def open_table(
    d: Driver,
    table_id: str,
    profile: str,
    players: Sequence[tuple[int, str]] = (),
    *,
    min_stake: int = 100,
    max_stake: int = 1000,
    seats: int = 5,
    dealer: str | None = None,
    options: dict[str, bool] | None = None,
) -> None:
    """Open a table and seat ``players`` as (seat, player); ante tables take no seats."""
    d.call(
        "open_table", table_id, profile, options, min_stake=min_stake, max_stake=max_stake, seats=seats, dealer=dealer
    )
    for seat, player in players:
        d.call("take_seat", table_id, player, seat)


def hold_banker_bid(d: Driver, table_id: str, bids: Sequence[tuple[str, int]]) -> str:
    """Room: each (player, rounds) bids in order (0 skips), then the bid closes; returns the new banker."""
    for player, rounds in bids:
        d.call("bid_for_banker", table_id, player, rounds)
    d.call("close_banker_bid", table_id)
    banker = d.app.get_table(table_id).banker
    assert banker is not None
    return banker


def start_round(d: Driver, table_id: str, client_seed: str = "") -> str:
    return d.call("start_round", table_id, client_seed).id


def place_bets(d: Driver, round_id: str, bets: Iterable[tuple[int, str, int]]) -> None:
    for seat, player, stake in bets:
        d.call("place_bet", round_id, seat, player, stake)


def seat_bets(d: Driver, round_id: str, stake: int) -> list[tuple[int, str, int]]:
    """Each seat's holder stakes ``stake`` on its seat (what most scenarios do)."""
    state = d.app.round_state(round_id)
    bets = [(seat, holder, stake) for seat, holder in state.seats if holder is not None]
    place_bets(d, round_id, bets)
    return bets


# --- playing a round -------------------------------------------------------------------------


def step(d: Driver, round_id: str) -> CommandResult:
    """Issue the next command of the round, chosen from what ``legal_commands`` allows."""
    app = d.app
    state = app.round_state(round_id)
    ops = app.legal_commands(round_id)
    chooser = d.chooser
    phase = state.phase
    if phase is Phase.BETTING:
        assert "deal" in ops, ops
        return d.call("deal", round_id)
    if phase is Phase.SIDE_BETS:
        for seat, holder in state.seats:
            if holder is not None and "place_side_bet" in app.legal_commands(round_id, seat):
                if chooser.side_bet(state, seat):
                    return d.call("place_side_bet", round_id, seat, holder)
                break  # this seat passes; close the window
        return d.call("close_side_bets", round_id)
    if phase is Phase.PLAYER_TURNS:
        turn = state.turn
        assert turn is not None, state
        seat = turn
        if chooser.timeout(state):
            return d.call("time_out_turn", round_id)
        choices = app.legal_commands(round_id, seat)
        assert choices == ("draw", "stay"), (seat, choices)
        holder = state.holder(seat)
        assert holder is not None
        return d.call("draw" if chooser.player_draws(state, seat) else "stay", round_id, seat, holder)
    if phase is Phase.BANKER_TURN:
        if chooser.timeout(state):
            return d.call("time_out_turn", round_id)
        choices = app.legal_commands(round_id, BANKER)
        banker = state.banker_player
        if not choices:  # nothing to choose: only the operator's timeout moves it on
            return d.call("time_out_turn", round_id)
        if "banker_reveal" in choices:
            seats = chooser.reveal(state)
            if seats:
                return d.call("banker_reveal", round_id, seats, banker)
        return d.call("banker_draw" if chooser.banker_draws(state) else "banker_stay", round_id, banker)
    raise AssertionError(f"round {round_id} is {phase.value}: nothing to do")


def drive_round(d: Driver, round_id: str, max_steps: int = MAX_STEPS) -> RoundView:
    """Play ``round_id`` to its close; returns the closed round."""
    for _ in range(max_steps):
        if d.app.round_state(round_id).phase is Phase.CLOSED:
            return d.app.get_round(round_id)
        step(d, round_id)
    raise AssertionError(f"round {round_id} did not close within {max_steps} commands")


def drive_until(d: Driver, round_id: str, phase: Phase, max_steps: int = MAX_STEPS) -> bool:
    """Play until the round is in ``phase`` (True) or closed without reaching it (False)."""
    for _ in range(max_steps):
        current = d.app.round_state(round_id).phase
        if current is phase:
            return True
        if current is Phase.CLOSED:
            return False
        step(d, round_id)
    raise AssertionError(f"round {round_id} did not reach {phase.value} within {max_steps} commands")


def kinds(result: CommandResult | RoundView) -> list[str]:
    return [e.kind for e in result.events]


def events_of(view: RoundView, kind: str) -> list[dict[str, Any]]:
    return [e.data for e in view.events if e.kind == kind]


# --- money -----------------------------------------------------------------------------------


@dataclass
class Ledger:
    """Balances of wallets and the house's books of tables at one moment."""

    wallets: dict[str, int]
    house: dict[str, tuple[int, int]]

    @classmethod
    def take(cls, app: PokdengApp, wallets: Iterable[str], tables: Iterable[str]) -> Ledger:
        w = {name: app.get_wallet(name).balance for name in wallets}
        h = {}
        for table_id in tables:
            view = app.get_table(table_id)
            h[table_id] = (view.house_net, view.commission)
        return cls(w, h)

    def changes(self, later: Ledger) -> tuple[dict[str, int], int, int]:
        wallets = {k: later.wallets[k] - v for k, v in self.wallets.items()}
        house = sum(later.house[k][0] - v[0] for k, v in self.house.items())
        commission = sum(later.house[k][1] - v[1] for k, v in self.house.items())
        return wallets, house, commission

    def assert_balanced(self, app: PokdengApp) -> tuple[dict[str, int], int, int]:
        """Money since this ledger balances to zero and no wallet holds a reservation."""
        later = Ledger.take(app, self.wallets, self.house)
        wallets, house, commission = self.changes(later)
        assert sum(wallets.values()) + house + commission == 0, (wallets, house, commission)
        for name in self.wallets:
            view = app.get_wallet(name)
            assert view.reserved == 0 and view.reservations == (), view
            assert view.available == view.balance
        return wallets, house, commission


def assert_round_books(view: RoundView) -> dict[str, int]:
    """The closed round's own record balances: wallet nets + house_net + commission == 0."""
    assert view.phase == "closed", view.phase
    settled = events_of(view, "round_settled")
    voided = events_of(view, "round_voided")
    assert len(settled) + len(voided) == 1
    if voided:
        return {}
    s = settled[0]
    nets = {player: net for player, _reserved, net in s["wallets"]}
    assert sum(nets.values()) + s["house_net"] + s["commission"] == 0, s
    return nets


def statement_total(app: PokdengApp, wallet_id: str) -> tuple[int, list[Any]]:
    """The sum of every statement line's amount (paging through), and the lines."""
    lines: list[Any] = []
    after = 0
    while True:
        page = app.wallet_statement(wallet_id, after=after, limit=1000)
        if not page:
            break
        lines.extend(page)
        after = page[-1].position
    return sum(line.amount for line in lines), lines


def cards_in_play_order(view: RoundView) -> list[str]:
    """Every card the round used, in the order it left the shoe: the deal, then each draw."""
    out: list[str] = []
    for event in view.events:
        if event.kind == "cards_dealt":
            out.extend(card for _seat, card in event.data["cards"])
        elif event.kind == "card_drawn":
            out.append(event.data["card"])
    return out


def assert_cards_from_shoe(view: RoundView) -> None:
    """A closed round's cards are the first cards of the shuffle its revealed seed commits to."""
    from pokdeng_core.profiles import get_profile
    from pokdeng_core.shuffle import commitment, shuffled_deck

    assert view.phase == "closed" and view.server_seed
    seed = bytes.fromhex(view.server_seed)
    assert commitment(seed) == view.commitment
    decks = get_profile(view.profile, view.profile_version).decks
    shoe = [str(card) for card in shuffled_deck(seed, view.client_seed, view.nonce, decks)]
    used = cards_in_play_order(view)
    assert used == shoe[: len(used)], (used, shoe[: len(used)])
