"""Replies to commands, built from the command's result (the stream's view as saved: no read back).

Each returns the fields of the method's own response message (``OpenWalletResponse``,
``PlaceBetResponse``, ...): every command response of a stream has the same three fields.
"""

from __future__ import annotations

from typing import Any

from pokdeng_service.api import convert
from pokdeng_service.api.rpcs import Call, Env
from pokdeng_service.application import access
from pokdeng_service.application.principal import Role
from pokdeng_service.application.views import CommandResult, Reservation, RoundView, TableView, WalletView
from pokdeng_service.store.aggregates import wallet_step, wallet_uuid


def viewer(call: Call) -> str | None:
    """The player whose view of a round applies, or None for operators and auditors (they see everything)."""
    return call.principal.player if call.principal.role is Role.PLAYER else None


def wallet_reply(env: Env, _call: Call, result: CommandResult) -> dict[str, Any]:
    view = result.view
    if not isinstance(view, WalletView):  # a retry: read the wallet as it is now
        view = env.service.app_for(result.id, "wallet").get_wallet(result.id)
    positions = [e.position for e in result.events if e.position > 1]
    if not result.replayed and isinstance(result.view, WalletView) and positions == [result.view.version]:
        after = {view.version: view}  # the command's one movement: the wallet as it saved it (no read back)
    else:
        app = env.service.app_for(result.id, "wallet")
        after = _balances_after(app, result.id, [e.position for e in result.events])
    events = [convert.recorded_event(e, "wallet", wallet_after=after.get(e.position)) for e in result.events]
    return {"request_id": result.request_id, "events": events, "wallet": convert.wallet(view)}


def _balances_after(app: Any, wallet_id: str, positions: list[int]) -> dict[int, WalletView]:
    """The wallet's balances after each of its events at ``positions`` (what the wallet chain covers), folded
    from its stream: the same on a retry, however the wallet moved since."""
    if not positions:
        return {}
    balance, reservations, out = 0, dict[str, int](), {}
    wanted = set(positions)
    for event in app.stream_events(wallet_uuid(wallet_id), lte=max(positions)):
        if event.position == 1:
            continue
        balance, reservations = wallet_step(balance, reservations, event.kind, event.data)
        if event.position in wanted:
            held = tuple(Reservation(round_id=k, amount=v) for k, v in reservations.items())
            reserved = sum(reservations.values())
            out[event.position] = WalletView(
                wallet_id=wallet_id,
                balance=balance,
                reserved=reserved,
                available=balance - reserved,
                reservations=held,
                version=event.position,
            )
    return out


def table_reply(env: Env, call: Call, result: CommandResult) -> dict[str, Any]:
    view = result.view
    if not isinstance(view, TableView):
        view = env.service.app_for(result.id).get_table(result.id)
    view = access.table_for(call.principal, view)
    events = convert.table_events(result.events, viewer(call))
    return {"request_id": result.request_id, "events": events, "table": convert.table(view)}


def round_reply(env: Env, call: Call, result: CommandResult) -> dict[str, Any]:
    app = env.service.app_for(result.id, "round")
    view = result.view
    player = viewer(call)
    seen_then = None
    if not isinstance(view, RoundView):  # a retry: the round as it is now, its events as they were shown then
        view = app.get_round(result.id)
        if player is not None and result.events and view.version > result.events[-1].position:
            seen_then = convert.visibility_for(player, app.round_view_at(result.id, result.events[-1].position))
    seen = convert.visibility_for(player, view)
    return {
        "request_id": result.request_id,
        "events": convert.recorded_events(result.events, "round", seen_then or seen),
        "round": convert.round_(view, seen, with_events=False),
    }
