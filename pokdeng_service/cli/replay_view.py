"""A round told step by step, as text for the terminal and as one standalone HTML page for disputes."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from pokdeng_core.cards import parse_card
from pokdeng_service.application.views import RecordedEvent, RoundView


def _cards(cards: Sequence[str], pretty: bool = True) -> str:
    return " ".join(parse_card(c).pretty if pretty else c for c in cards)


def _seat(seat: int, holders: dict[int, str | None], banker: str | None) -> str:
    if seat == 0:
        return f"banker ({banker})" if banker else "banker (house)"
    holder = holders.get(seat)
    return f"seat {seat} ({holder})" if holder else f"position {seat}"


def describe(event: RecordedEvent, holders: dict[int, str | None], banker: str | None) -> str:
    """One line saying what an event means."""
    d: dict[str, Any] = event.data
    kind = event.kind
    if kind == "round_opened":
        seats = ", ".join(f"{s} {h}" if h else f"{s}" for s, h in d["seats"])
        who = d["banker_player"] or "the house"
        return (
            f"round {d['round_no']} of table {d['table_id']} opens: {d['profile_name']} v{d['profile_version']}, "
            f"seats {seats}, banker {who}, stakes {d['min_stake']}..{d['max_stake']}"
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
        extra = f", banker reserves {d['banker_reserved']}" if d["banker_reserved"] else ""
        where = _seat(d["seat"], holders, banker)
        return f"{d['player']} stakes {d['stake']} on {where} (reserves {d['reserved']}{extra})"
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
        return f"{d['player']} places a side bet of {d['stake']}"
    if kind == "side_bets_settled":
        results = ", ".join(f"{p} {n:+d}" for _s, p, _st, n in d["results"]) or "none placed"
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
            f" x{d['multiplier']}, net {d['net']:+d}" + (f" (commission {d['commission']})" if d["commission"] else "")
        )
    if kind == "round_settled":
        nets = ", ".join(f"{p} {n:+d}" for p, _r, n in d["wallets"])
        return f"settled: {nets}; house {d['house_net']:+d}; commission {d['commission']}"
    if kind == "round_voided":
        return f"voided: {d['reason']} (reservations released)"
    if kind == "seed_revealed":
        return f"server seed revealed: {d['server_seed']}"
    if kind == "round_closed":
        return f"round closed ({d['outcome']})"
    return kind


def text(round_view: RoundView) -> str:
    holders: dict[int, str | None] = {}
    lines = [f"Round {round_view.round_id} · {round_view.profile} v{round_view.profile_version} · {round_view.phase}"]
    for event in round_view.events:
        if event.kind == "round_opened":
            holders = {s: h for s, h in event.data["seats"]}
        if not event.digest:
            continue
        lines.append(f"  #{event.position:<3} {event.timestamp[11:23]}  {describe(event, holders, round_view.banker)}")
    return "\n".join(lines)


_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:60rem;color:#222}
h1{font-size:1.4rem} table{border-collapse:collapse;width:100%} td,th{border-bottom:1px solid #ddd;padding:.35rem;
text-align:left;vertical-align:top} .red{color:#c00} .card{font-weight:600;margin-right:.25rem}
code{font-size:.8rem;color:#555} .verdict{padding:.5rem;border-radius:.3rem;background:#eef7ee}
.bad{background:#fbeaea}
"""


_CARD = re.compile(r"(10|[2-9AJQK])([♠♥♣♦])")


def _html_cards(text_line: str) -> str:
    def card(match: re.Match[str]) -> str:
        red = " red" if match.group(2) in "♥♦" else ""
        return f'<span class="card{red}">{match.group(0)}</span>'

    return _CARD.sub(card, html.escape(text_line))


def html_page(round_view: RoundView, verdict_text: str = "", ok: bool = True) -> str:
    holders: dict[int, str | None] = {}
    rows = []
    for event in round_view.events:
        if event.kind == "round_opened":
            holders = {s: h for s, h in event.data["seats"]}
        if not event.digest:
            continue
        line = describe(event, holders, round_view.banker)
        rows.append(
            f"<tr><td>{event.position}</td><td>{html.escape(event.timestamp[11:23])}</td><td>{html.escape(event.kind)}</td>"
            f"<td>{_html_cards(line)}</td><td><code>{event.digest[:12]}</code></td></tr>"
        )
    verdict = ""
    if verdict_text:
        verdict = f'<pre class="verdict{"" if ok else " bad"}">{html.escape(verdict_text)}</pre>'
    title = html.escape(f"Round {round_view.round_id}")
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{title}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{title}</h1><p>{html.escape(round_view.profile)} v{round_view.profile_version} · table "
        f"{html.escape(round_view.table_id)} · commitment <code>{html.escape(round_view.commitment)}</code></p>"
        f"{verdict}<table><thead><tr><th>#</th><th>time</th><th>event</th><th>what happened</th><th>digest</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></body></html>\n"
    )
