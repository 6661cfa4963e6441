"""The RoundService: round commands, a round, the closed rounds, what a seat may do now."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from google.protobuf.timestamp_pb2 import Timestamp

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core import limits
from pokdeng_core.round_state import RoundState
from pokdeng_service.api import convert, paging
from pokdeng_service.api.replies import round_reply, viewer
from pokdeng_service.api.requests import Fields
from pokdeng_service.api.rpcs import OPERATOR, PLAYERS, READERS, Call, Env, Rpc, command, query
from pokdeng_service.application import access
from pokdeng_service.application import commands as c
from pokdeng_service.application import round_commands as rc
from pokdeng_service.application.app import PokdengApp
from pokdeng_service.application.errors import (
    FieldViolation,
    NotFound,
    PermissionDenied,
    RequestInvalid,
    integrity_log,
)
from pokdeng_service.application.principal import Role
from pokdeng_service.application.views import RoundView

if TYPE_CHECKING:  # (the read models are the server's to load: a round filter's arguments, as they take them)
    from pokdeng_service.readmodels.paging import RoundFilterArgs

SERVICE = "RoundService"
LIST_ROUNDS_PAGE = 10  # a ListRounds page that asks no size


ROUND_VIEWS: dict[int, bool] = {pb.ROUND_VIEW_BASIC: False, pb.ROUND_VIEW_FULL: True}  # view: with events


def readable_round(env: Env, call: Call, round_id: str, with_events: bool = True) -> RoundView:
    """The round, if the caller may read it: a player only a round it takes part in."""
    view = env.service.app_for(round_id, "round").get_round(round_id, with_events=with_events)
    access.require_round_reader(call.principal, view)
    return view


def get_round(env: Env, call: Call, request: pb.GetRoundRequest) -> pb.GetRoundResponse:
    f = Fields()
    f.ident("round_id", request.round_id)
    full = f.choice("view", int(request.view), ROUND_VIEWS) is not False  # (unspecified: the full view)
    f.done()
    view = readable_round(env, call, request.round_id)
    return pb.GetRoundResponse(round=convert.round_(view, convert.visibility_for(viewer(call), view), with_events=full))


_FIRST, _LAST = -62135596800, 253402300799  # 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: Timestamp's range


def _time_text(f: Fields, field: str, stamp: Timestamp) -> str | None:
    """A filter's time as the read models compare it (None: unset); refused outside Timestamp's range."""
    if not (stamp.seconds or stamp.nanos):
        return None
    if not _FIRST <= stamp.seconds <= _LAST or not 0 <= stamp.nanos < 1_000_000_000:
        f.bad(field, f"{field} must be a time from 0001-01-01 to 9999-12-31 (UTC)")
        return None
    return stamp.ToDatetime(tzinfo=UTC).isoformat()


def _costly_list(request: pb.ListRoundsRequest) -> bool:
    """A page of rounds with their events, or of more rounds than the default page, is costly (``Rpc.costly``)."""
    return request.view == pb.ROUND_VIEW_FULL or request.page_size > LIST_ROUNDS_PAGE


def list_rounds(env: Env, call: Call, request: pb.ListRoundsRequest) -> pb.ListRoundsResponse:
    f = Fields()
    f.ident("table_id", request.table_id, required=False)
    f.ident("player", request.player, required=False)
    size = f.page_size(request.page_size, limits.MAX_RECENT_ROUNDS, default=LIST_ROUNDS_PAGE)
    start = _time_text(f, "close_time_start", request.close_time_start)
    end = _time_text(f, "close_time_end", request.close_time_end)
    outcome = f.choice("outcome", int(request.outcome), convert.OUTCOME_FROM_PB)
    full = f.choice("view", int(request.view), ROUND_VIEWS) is True  # (unspecified: the basic view)
    f.done()
    player = request.player or None
    principal = call.principal
    if principal.role is Role.PLAYER:
        if player is not None and player != principal.player:
            raise PermissionDenied(f"{principal.describe()} may list only its own rounds", player=player)
        player = principal.player
    filters: RoundFilterArgs = {
        "table_id": request.table_id or None,
        "player": player,
        "closed_from": start,
        "closed_to": end,
        "outcome": outcome,
    }
    cursor = paging.decode("ListRounds", filters, request.page_token, env.token_key)
    positions = 1 if env.recent is None else len(env.service.apps)  # one per partition (a walk: a round number)
    if cursor is not None:
        if not isinstance(cursor, list) or len(cursor) != positions:
            paging.int_cursor(-1)  # malformed: refused on page_token
        cursor = [paging.int_cursor(p) for p in cursor]
    if env.recent is None:  # no read models: walk the table's rounds (a table must be named)
        views, next_cursor = _walk(env, filters, cursor[0] if cursor else None, size, full)
    else:
        page = env.recent.page_rounds(**filters, cursor=tuple(cursor) if cursor else None, limit=size)
        # the view's details come from the round's events, also in the BASIC view (which does not list them)
        views = _round_views(env, [s.round_id for s in page.rounds])
        views = [v for v in views if _as_listed(v, filters)]  # (the record decides, never a view row alone)
        next_cursor = list(page.next_cursor) if page.next_cursor is not None else None
    who = viewer(call)
    rounds = [convert.round_(v, convert.visibility_for(who, v), with_events=full) for v in views]
    token = paging.encode("ListRounds", filters, next_cursor, env.token_key) if next_cursor is not None else ""
    return pb.ListRoundsResponse(rounds=rounds, next_page_token=token)


def _round_views(env: Env, round_ids: list[str]) -> list[RoundView]:
    """Each round's view from its record, in order: each partition's rounds loaded together (``get_rounds``: the
    streams not cached read once each, together)."""
    apps: dict[int, tuple[PokdengApp, list[str]]] = {}
    for round_id in round_ids:
        app = env.service.app_for(round_id, "round")
        apps.setdefault(id(app), (app, []))[1].append(round_id)
    views: dict[str, RoundView] = {}
    for app, ids in apps.values():
        views.update(zip(ids, app.get_rounds(ids), strict=True))
    return [views[round_id] for round_id in round_ids]


def _as_listed(view: RoundView, filters: RoundFilterArgs) -> bool:
    """Whether the round, as its record has it, is one the query asked for (its table, its player taking part):
    a read-model row that says otherwise (a restored or edited view) is left out, with an integrity alert."""
    table_id, player = filters.get("table_id"), filters.get("player")
    wrong = (table_id is not None and view.table_id != table_id) or (
        player is not None and player not in access.participants(view)
    )
    if wrong:
        integrity_log.error(
            "READ MODEL DISAGREES: the views list round %r for %s, and its record does not: left out "
            "(pokdeng verify --all names the rows; pokdeng rebuild-read-models makes them again)",
            view.round_id,
            f"player {player!r}" if player is not None else f"table {table_id!r}",
        )
    return not wrong


def _walk(
    env: Env, filters: RoundFilterArgs, before: int | None, size: int, full: bool
) -> tuple[list[RoundView], list[int] | None]:
    """A table's closed rounds newest first, by walking them (a server without read models); the cursor is
    the round number the next page starts below."""
    table_id = filters.get("table_id")
    if table_id is None:
        raise RequestInvalid([FieldViolation("table_id", "name the table (this server keeps no read models)")])
    app = env.service.app_for(table_id)
    table = app.get_table(table_id)
    start = table.round_no if before is None else min(before - 1, table.round_no)
    out: list[RoundView] = []
    for number in range(start, 0, -1):  # a table's rounds are "<table_id>#<n>"
        try:
            view = app.get_round(f"{table_id}#{number}")
        except NotFound:
            continue
        if view.phase != "closed" or not _matches(view, filters):
            continue
        out.append(view)
        if len(out) == size:
            return out, ([number] if number > 1 else None)
    return out, None


def _matches(view: RoundView, filters: RoundFilterArgs) -> bool:
    player, outcome = filters.get("player"), filters.get("outcome")
    if player is not None and player not in convert.stakeholders(view):
        return False
    if outcome is not None and view.outcome != outcome:
        return False
    start, end = filters.get("closed_from"), filters.get("closed_to")
    if start is not None or end is not None:
        moment = datetime.fromisoformat(view.events[-1].timestamp)
        if (start is not None and moment < datetime.fromisoformat(start)) or (
            end is not None and moment >= datetime.fromisoformat(end)
        ):
            return False
    return True


def get_legal_commands(env: Env, call: Call, request: pb.GetLegalCommandsRequest) -> pb.GetLegalCommandsResponse:
    f = Fields()
    f.ident("round_id", request.round_id)
    seat = f.seat("seat", request.seat, banker=True) if request.HasField("seat") else None
    f.done()
    principal = call.principal
    app = env.service.app_for(request.round_id, "round")
    view = app.get_round(request.round_id, with_events=False)
    state = app.round_state(request.round_id)
    if principal.role is Role.PLAYER:
        if seat is None:
            raise PermissionDenied(f"{principal.describe()} may ask only about its own seats", round=request.round_id)
        holder = state.banker_player if seat == 0 else dict(state.seats).get(seat)
        position = seat != 0 and seat in dict(state.seats) and state.rules.fixed_positions is not None
        if holder is None and position:  # an ante position: no one holds it; a bettor of the round may ask
            access.require_round_reader(principal, view)
        elif holder != principal.player:
            raise PermissionDenied(f"seat {seat} is not held by {principal.describe()}", seat=str(seat))
    answer = pb.GetLegalCommandsResponse(
        round_id=request.round_id,
        phase=convert.PHASE_TO_PB.get(state.phase.value, pb.ROUND_PHASE_UNSPECIFIED),
        commands=[_legal(name, state, seat, view.version) for name in app.legal_commands(request.round_id, seat)],
    )
    if seat is not None:
        answer.seat = seat
    return answer


def _legal(name: str, state: RoundState, seat: int | None, version: int) -> pb.LegalCommand:
    """A legal command with the parameters it may take now."""
    legal = pb.LegalCommand(kind=convert.COMMAND_TO_PB[name])
    if name == "place_bet":
        legal.seats.extend([seat] if seat is not None else [])
        legal.min_amount, legal.max_amount = state.min_stake, state.max_stake
        legal.even_amount = state.rules.name == "ante"
    elif name == "place_side_bet" and seat is not None:
        legal.seats.append(seat)
        stake = sum(b.stake for b in state.bets if b.seat == seat)
        legal.min_amount = legal.max_amount = stake
    elif name in ("draw", "stay") and seat is not None:
        legal.seats.append(seat)
    elif name == "banker_reveal":
        legal.seats.extend(s for s in state.in_play if s not in state.revealed)
    elif name == "time_out_turn":
        legal.expected_version = version
    return legal


RPCS: tuple[Rpc, ...] = (
    command(SERVICE, "StartRound", OPERATOR, lambda r: c.StartRound(r.table_id, r.client_seed), round_reply),
    command(
        SERVICE,
        "PlaceBet",
        PLAYERS,
        lambda r: rc.PlaceBet(
            r.round_id, r.seat, r.player, r.stake, r.client_seed if r.HasField("client_seed") else None
        ),
        round_reply,
    ),
    command(
        SERVICE,
        "ContributeSeed",
        PLAYERS,
        lambda r: rc.ContributeSeed(r.round_id, r.player, r.client_seed),  # player "": the platform
        round_reply,
    ),
    command(SERVICE, "Deal", OPERATOR, lambda r: rc.Deal(r.round_id), round_reply),
    command(SERVICE, "PlaceSideBet", PLAYERS, lambda r: rc.PlaceSideBet(r.round_id, r.seat, r.player), round_reply),
    command(SERVICE, "CloseSideBets", OPERATOR, lambda r: rc.CloseSideBets(r.round_id), round_reply),
    command(SERVICE, "Draw", PLAYERS, lambda r: rc.Draw(r.round_id, r.seat, r.player), round_reply),
    command(SERVICE, "Stay", PLAYERS, lambda r: rc.Stay(r.round_id, r.seat, r.player), round_reply),
    command(
        SERVICE,
        "BankerReveal",
        PLAYERS,
        lambda r: rc.BankerReveal(r.round_id, tuple(r.seats), r.player or None),
        round_reply,
    ),
    command(SERVICE, "BankerDraw", PLAYERS, lambda r: rc.BankerDraw(r.round_id, r.player or None), round_reply),
    command(SERVICE, "BankerStay", PLAYERS, lambda r: rc.BankerStay(r.round_id, r.player or None), round_reply),
    command(
        SERVICE,
        "TimeOutTurn",
        OPERATOR,
        lambda r: rc.TimeOutTurn(r.round_id, r.expected_version if r.HasField("expected_version") else None),
        round_reply,
    ),
    command(SERVICE, "VoidRound", OPERATOR, lambda r: rc.VoidRound(r.round_id, r.reason), round_reply),
    query(SERVICE, "GetRound", READERS, get_round),
    query(SERVICE, "ListRounds", READERS, list_rounds, costly=_costly_list),
    query(SERVICE, "GetLegalCommands", READERS, get_legal_commands),
)
