"""A round told step by step, as text for the terminal. The dispute page (``pokdeng replay ROUND --html``)
is ``pokdeng_service.web``."""

from __future__ import annotations

from collections.abc import Sequence
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
    d: dict[str, Any] = event.data

    def m(amount: int, signed: bool = False) -> str:
        return money(amount, currency, signed)

    kind = event.kind
    if kind == "round_opened":
        seats = ", ".join(f"{s} {h}" if h else f"{s}" for s, h in d["seats"])
        who = d["banker_player"] or "the house"
        return (
            f"round {d['round_no']} of table {d['table_id']} opens: {d['profile_name']} v{d['profile_version']}, "
            f"seats {seats}, banker {who}, stakes {m(d['min_stake'])} to {m(d['max_stake'])}"
        )
    if kind == "shuffle_committed":
        return (
            f"shuffle committed: SHA-256 {d['commitment'][:16]}…, client seed {d['client_seed']!r}, nonce {d['nonce']}"
        )
    if kind == "contributions_opened":
        return f"client seed to be derived at the deal from contributions ({d['rule']})"
    if kind == "client_seed_contributed":
        return f"{d['contributor'] or 'the platform'} contributes client seed {d['client_seed']!r}"
    if kind == "client_seed_fixed":
        return f"client seed fixed: {d['client_seed']} from {len(d['contributions'])} contribution(s)"
    if kind == "bet_placed":
        extra = f", banker reserves {m(d['banker_reserved'])}" if d["banker_reserved"] else ""
        where = _seat(d["seat"], holders, banker)
        return f"{d['player']} stakes {m(d['stake'])} on {where} (reserves {m(d['reserved'])}{extra})"
    if kind == "cards_dealt":
        hands: dict[int, list[str]] = {}
        for seat, card in d["cards"]:
            hands.setdefault(seat, []).append(card)
        parts = [f"{_seat(s, holders, banker)}: {_cards(c)}" for s, c in hands.items()]
        up = f" (banker's first card {parse_card(d['banker_up_card']).pretty} face up)" if d["banker_up_card"] else ""
        return "deal — " + "; ".join(parts) + up
    if kind == "pok_declared":
        return f"{_seat(d['seat'], holders, banker)} shows {d['label']} {_cards(d['cards'])}"
    if kind == "side_bet_window_opened":
        return f"banker shows {parse_card(d['up_card']).pretty}: side bets open"
    if kind == "side_bet_placed":
        return f"{d['player']} places a side bet of {m(d['stake'])}"
    if kind == "side_bets_settled":
        results = ", ".join(f"{p} {m(n, True)}" for _s, p, _st, n in d["results"]) or "none placed"
        return f"banker {'has' if d['natural'] else 'has no'} natural: side bets {results}"
    if kind == "turn_timed_out":
        return f"{_seat(d['seat'], holders, banker)} timed out: automatic {d['action']}"
    if kind == "card_drawn":
        return f"{_seat(d['seat'], holders, banker)} draws {parse_card(d['card']).pretty} ({d['reason']})"
    if kind == "player_stood":
        return f"{_seat(d['seat'], holders, banker)} stays ({d['reason']})"
    if kind == "hands_revealed":
        shown = "; ".join(f"{_seat(s, holders, banker)}: {_cards(c)}" for s, c in d["hands"])
        return ("banker reveals chosen hands — " if d["selective"] else "showdown — ") + shown
    if kind == "bet_settled":
        return (
            f"{d['player']} on seat {d['seat']}: {d['hand']} vs {d['banker_hand']} → {d['outcome'].replace('_', ' ')}"
            f" {multiplier(d['multiplier'])}, net {m(d['net'], True)}"
            + (f" (commission {m(d['commission'])})" if d["commission"] else "")
        )
    if kind == "round_settled":
        nets = ", ".join(f"{p} {m(n, True)}" for p, _r, n in d["wallets"])
        return f"settled: {nets}; house {m(d['house_net'], True)}; commission {m(d['commission'])}"
    if kind == "round_voided":
        by = f" by {d['by']}" if d.get("by") else ""
        return f"voided{by}: {d['reason']} (reservations released)"
    if kind == "seed_revealed":
        return f"server seed revealed: {d['server_seed']}"
    if kind == "round_closed":
        return f"round closed ({d['outcome']})"
    return kind


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
    as ``player`` may have it (its own wallet's balances only: ``audit.bundle.for_player``); an open round
    has none yet (its seed is secret), and shows only what the table shows: the hands shown to everyone
    (poks, revealed hands, kingmaker's up card), ``player``'s own too, and no digest that commits to a
    hidden card (docs/dispute.md). ``keys`` check the signed head in the browser."""
    from pokdeng_service import audit, web
    from pokdeng_service.api import convert
    from pokdeng_service.application import access
    from pokdeng_service.audit.bundle import for_player

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
