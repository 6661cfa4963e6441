"""What a caller may read: a player its own wallet and the rounds it takes part in; auditors and operators all."""

from __future__ import annotations

from pokdeng_core import events as re
from pokdeng_service.application.errors import PermissionDenied
from pokdeng_service.application.principal import Principal, Role
from pokdeng_service.application.views import RoundView, TableView


def require_reader(principal: Principal, player: str | None, what: str) -> None:
    """A player token may only read what belongs to its own player; an auditor reads everything."""
    if principal.may_act_for(player) or principal.role is Role.AUDITOR:
        return
    target = f" for {player!r}" if player else ""
    raise PermissionDenied(f"{principal.describe()} may not {what}{target}", player=player or "")


def participants(view: RoundView) -> set[str]:
    """Every player with a seat, a stake or the banker's role in the round (who may read it)."""
    people = {h.holder for h in view.hands if h.holder}
    people.update(b.player for b in (*view.bets, *view.side_bets))
    if view.banker:
        people.add(view.banker)
    for event in view.events:
        if event.kind == re.RoundOpened.kind:
            people.update(holder for _seat, holder in event.data["seats"] if holder)
            break
    return people


def require_round_reader(principal: Principal, view: RoundView) -> None:
    """A player reads only a round it takes part in."""
    if principal.role is Role.PLAYER and principal.player not in participants(view):
        raise PermissionDenied(f"{principal.describe()} takes no part in round {view.round_id!r}", round=view.round_id)


def table_for(principal: Principal, view: TableView) -> TableView:
    """The table as ``principal`` may see it: a player sees its own bid's capital, not other bidders'."""
    if principal.role is not Role.PLAYER or not view.bids:
        return view
    bids = tuple((p, rounds, capital if p == principal.player else 0) for p, rounds, capital in view.bids)
    return view.model_copy(update={"bids": bids})
