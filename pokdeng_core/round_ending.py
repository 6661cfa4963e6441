"""How a round ends: the hands revealed and their stakes settled, the round settled (the banker's result
and commission), the server seed revealed and the round closed; or the round voided, its reservations
given back.
"""

from __future__ import annotations

from . import commands as c
from . import events as e
from .errors import InvalidCommand, WrongPhase
from .evaluation import evaluate
from .round_cards import card_texts
from .round_deciding import RoundRun
from .round_state import BANKER, Phase
from .settlement import banker_commission, settle_values


def reveal_and_settle(run: RoundRun, seats: tuple[int, ...], selective: bool, by: str = "") -> None:
    """Show ``seats`` and the banker's hand and settle their stakes (``by``: a selective reveal's sender)."""
    state = run.state
    profile = state.rules
    shown = tuple((s, card_texts(state.cards(s))) for s in (*seats, BANKER))
    run.emit(e.HandsRevealed(seats, shown, selective, by))
    banker_value = evaluate(profile, state.banker_cards)
    for seat in seats:
        value = evaluate(profile, state.cards(seat))
        for bet in state.bets_on(seat):
            r = settle_values(profile, value, banker_value, bet.stake)
            run.emit(
                e.BetSettled(
                    seat,
                    bet.player,
                    bet.stake,
                    r.outcome.value,
                    str(r.multiplier),
                    r.gross,
                    r.commission,
                    r.player_net,
                    value.label,
                    banker_value.label,
                    r.ante_net,
                    r.bet_net,
                )
            )


def showdown(run: RoundRun) -> None:
    """Reveal and settle every hand not yet settled, then settle the round, reveal the seed and close."""
    state = run.state
    remaining = tuple(s for s in state.in_play if s not in state.revealed)
    if remaining:
        reveal_and_settle(run, remaining, selective=False)
    state = run.state
    house = state.banker_player is None
    owed = banker_commission(state.rules, state.banker_sum, house)
    nets = dict(state.nets)
    wallets = [(player, reserved, nets.get(player, 0)) for player, reserved in state.reserved]
    if not house:
        assert state.banker_player is not None
        wallets.append((state.banker_player, state.banker_reserved, state.banker_sum - owed))
    run.emit(
        e.RoundSettled(
            tuple(wallets),
            state.banker_sum,
            owed,
            state.player_commission + owed,
            state.banker_sum if house else 0,
        )
    )
    _reveal_seed_and_close(run, "settled")


def _reveal_seed_and_close(run: RoundRun, outcome: str) -> None:
    shoe = run.state.shoe
    if shoe is not None and shoe.server_seed:
        run.emit(e.SeedRevealed(shoe.server_seed.hex()))
    run.emit(e.RoundClosed(outcome))


def void_round(run: RoundRun, cmd: c.VoidRound) -> None:
    state = run.state
    if state.phase in (Phase.NEW, Phase.SHOWDOWN, Phase.SETTLED, Phase.CLOSED):
        raise WrongPhase(f"cannot void a round that is {state.phase.value}", phase=state.phase.value)
    reason = cmd.reason.strip()
    if not reason:
        raise InvalidCommand("say why the round is voided", field="reason")
    wallets = list(state.reserved)
    if state.banker_player is not None and state.banker_reserved:
        wallets.append((state.banker_player, state.banker_reserved))
    run.emit(e.RoundVoided(reason, tuple(wallets), cmd.by))
    _reveal_seed_and_close(run, "voided")
