"""A round told step by step, as text for the terminal. The dispute page (``pokdeng replay ROUND --html``)
is ``pokdeng_service.web``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pokdeng_core.cards import parse_card
from pokdeng_core.currencies import DEFAULT
from pokdeng_service.application.views import RecordedEvent, RoundView
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.cli.output import write_output
from pokdeng_service.store.signing import PublicKeys
from pokdeng_service.web.describe import money, multiplier, utc


def _cards(cards: Sequence[str], pretty: bool = True) -> str:
    return " ".join(parse_card(c).pretty if pretty else c for c in cards)


def _seat(seat: int, holders: dict[int, str | None], banker: str | None) -> str:
    if seat == 0:
        return f"banker ({banker})" if banker else "banker (house)"
    holder = holders.get(seat)
    return f"seat {seat} ({holder})" if holder else f"position {seat}"


def describe(event: RecordedEvent, holders: dict[int, str | None], banker: str | None, currency: str = DEFAULT) -> str:
    """One line saying what an event means, and who sent its command where the event names the sender
    (a non-empty ``by``: docs/events.md, "Who sent a command"). Amounts are in ``currency``, the round's, as a
    person reads them (``pokdeng_service.money``)."""
    line = _what(event, holders, banker, currency)
    by = event.data.get("by")
    if by and event.kind != "round_voided":  # (a void's line says it: "voided by ...")
        line += f" — by {by}"
    return line


def _what(event: RecordedEvent, holders: dict[int, str | None], banker: str | None, currency: str) -> str:
    say = _SAY.get(event.kind)
    return say(event.data, _Table(holders, banker, currency)) if say is not None else event.kind


@dataclass(frozen=True)
class _Table:
    """What an event's line names besides the event: who holds each seat, the banker, the round's currency."""

    holders: dict[int, str | None]
    banker: str | None
    currency: str

    def seat(self, seat: int) -> str:
        return _seat(seat, self.holders, self.banker)

    def m(self, amount: int, signed: bool = False) -> str:
        return money(amount, self.currency, signed)


def _round_opened(d: dict[str, Any], t: _Table) -> str:
    seats = ", ".join(f"{s} {h}" if h else f"{s}" for s, h in d["seats"])
    who = d["banker_player"] or "the house"
    return (
        f"round {d['round_no']} of table {d['table_id']} opens: {d['profile_name']} v{d['profile_version']}, "
        f"seats {seats}, banker {who}, stakes {t.m(d['min_stake'])} to {t.m(d['max_stake'])}"
    )


def _bet_placed(d: dict[str, Any], t: _Table) -> str:
    extra = f", banker reserves {t.m(d['banker_reserved'])}" if d["banker_reserved"] else ""
    return f"{d['player']} stakes {t.m(d['stake'])} on {t.seat(d['seat'])} (reserves {t.m(d['reserved'])}{extra})"


def _cards_dealt(d: dict[str, Any], t: _Table) -> str:
    hands: dict[int, list[str]] = {}
    for seat, card in d["cards"]:
        hands.setdefault(seat, []).append(card)
    parts = [f"{t.seat(s)}: {_cards(c)}" for s, c in hands.items()]
    up = f" (banker's first card {parse_card(d['banker_up_card']).pretty} face up)" if d["banker_up_card"] else ""
    return "deal — " + "; ".join(parts) + up


def _side_bets_settled(d: dict[str, Any], t: _Table) -> str:
    results = ", ".join(f"{p} {t.m(n, True)}" for _s, p, _st, n in d["results"]) or "none placed"
    return f"banker {'has' if d['natural'] else 'has no'} natural: side bets {results}"


def _hands_revealed(d: dict[str, Any], t: _Table) -> str:
    shown = "; ".join(f"{t.seat(s)}: {_cards(c)}" for s, c in d["hands"])
    return ("banker reveals chosen hands — " if d["selective"] else "showdown — ") + shown


def _bet_settled(d: dict[str, Any], t: _Table) -> str:
    return (
        f"{d['player']} on seat {d['seat']}: {d['hand']} vs {d['banker_hand']} → {d['outcome'].replace('_', ' ')}"
        f" {multiplier(d['multiplier'])}, net {t.m(d['net'], True)}"
        + (f" (commission {t.m(d['commission'])})" if d["commission"] else "")
    )


def _round_settled(d: dict[str, Any], t: _Table) -> str:
    nets = ", ".join(f"{p} {t.m(n, True)}" for p, _r, n in d["wallets"])
    return f"settled: {nets}; house {t.m(d['house_net'], True)}; commission {t.m(d['commission'])}"


def _round_voided(d: dict[str, Any], _t: _Table) -> str:
    by = f" by {d['by']}" if d.get("by") else ""
    return f"voided{by}: {d['reason']} (reservations released)"


# The line of each kind of event (a kind not here: its name), from its data and the table's seats and currency.
_SAY: dict[str, Callable[[dict[str, Any], _Table], str]] = {
    "round_opened": _round_opened,
    "shuffle_committed": lambda d, _t: (
        f"shuffle committed: SHA-256 {d['commitment'][:16]}…, client seed {d['client_seed']!r}, nonce {d['nonce']}"
    ),
    "contributions_opened": lambda d, _t: f"client seed to be derived at the deal from contributions ({d['rule']})",
    "client_seed_contributed": lambda d, _t: (
        f"{d['contributor'] or 'the platform'} contributes client seed {d['client_seed']!r}"
    ),
    "client_seed_fixed": lambda d, _t: (
        f"client seed fixed: {d['client_seed']} from {len(d['contributions'])} contribution(s)"
    ),
    "bet_placed": _bet_placed,
    "cards_dealt": _cards_dealt,
    "pok_declared": lambda d, t: f"{t.seat(d['seat'])} shows {d['label']} {_cards(d['cards'])}",
    "side_bet_window_opened": lambda d, _t: f"banker shows {parse_card(d['up_card']).pretty}: side bets open",
    "side_bet_placed": lambda d, t: f"{d['player']} places a side bet of {t.m(d['stake'])}",
    "side_bets_settled": _side_bets_settled,
    "turn_timed_out": lambda d, t: f"{t.seat(d['seat'])} timed out: automatic {d['action']}",
    "card_drawn": lambda d, t: f"{t.seat(d['seat'])} draws {parse_card(d['card']).pretty} ({d['reason']})",
    "player_stood": lambda d, t: f"{t.seat(d['seat'])} stays ({d['reason']})",
    "hands_revealed": _hands_revealed,
    "bet_settled": _bet_settled,
    "round_settled": _round_settled,
    "round_voided": _round_voided,
    "seed_revealed": lambda d, _t: f"server seed revealed: {d['server_seed']}",
    "round_closed": lambda d, _t: f"round closed ({d['outcome']})",
}


def round_currency(events: Sequence[RecordedEvent]) -> str:
    """The round's currency, as its opening records it (rounds opened before currencies: THB)."""
    opened = next((e for e in events if e.kind == "round_opened"), None)
    return str((opened.data.get("currency") if opened is not None else None) or DEFAULT)


def text(round_view: RoundView) -> str:
    holders: dict[int, str | None] = {}
    currency = round_currency(round_view.events)
    lines = [
        f"Round {round_view.round_id} · {round_view.profile} v{round_view.profile_version} · {round_view.phase}"
        f" · {currency}"
    ]
    day = ""
    for event in round_view.events:
        if event.kind == "round_opened":
            holders = {s: h for s, h in event.data["seats"]}
        if not event.digest:
            continue
        if event.timestamp[:10] != day:  # each date once, in full (the times are UTC)
            day = event.timestamp[:10]
            lines.append(f"  {utc(event.timestamp).split(' ')[0]} (times in UTC)")
        what = describe(event, holders, round_view.banker, currency)
        lines.append(f"  #{event.position:<3} {utc(event.timestamp)[11:-4]}  {what}")
    return "\n".join(lines)


def _hex_keys(keys: PublicKeys | None) -> list[str]:
    return [keys.hex(key_id) for key_id in keys] if keys is not None else []


def write_dispute_page(
    app: Any, view: RoundView, verdict: Verdict, path: Path, keys: PublicKeys | None, player: str | None = None
) -> None:
    """The round's dispute page (``pokdeng_service.web``): a closed round's carries its bundle as exported, or
    as ``player`` may have it (its own wallet's balances only: ``audit.export.for_player``); an open round
    has none yet (its seed is secret), and shows only what the table shows: the hands shown to everyone
    (poks, revealed hands, kingmaker's up card), ``player``'s own too, and no digest that commits to a
    hidden card (docs/dispute.md). ``keys`` check the signed head in the browser."""
    from pokdeng_service import audit, web
    from pokdeng_service.api import convert
    from pokdeng_service.application import access
    from pokdeng_service.audit.export import for_player

    if player is not None and player not in access.participants(view):
        raise ValueError(f"{player!r} has no seat, stake or banker's role in round {view.round_id}")
    events: list[Any] = list(view.events)
    raw = None
    if view.phase == "closed":
        bundle = audit.export_bundle(app, view.round_id)
        raw = audit.bundle_bytes(for_player(bundle, player) if player is not None else bundle)
    else:
        events = convert.seen_events(events, convert.visibility_for(player or convert.SPECTATOR, view))
    page = web.dispute_page(events, raw, verdict, keys=_hex_keys(keys), phase=view.phase)
    write_output(path, page)


def write_verifier_page(path: Path, keys: PublicKeys | None) -> None:
    """The page that checks any bundle file chosen in it, in the browser."""
    from pokdeng_service import web

    write_output(path, web.verifier_page(keys=_hex_keys(keys)))
