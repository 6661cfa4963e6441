"""The TableService: table commands (seats, the banker bid, checkpoints), a table, the tables."""

from __future__ import annotations

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core import currencies, limits
from pokdeng_service.api import convert, paging
from pokdeng_service.api.replies import table_reply
from pokdeng_service.api.requests import Fields
from pokdeng_service.api.rpcs import OPERATOR, PLAYERS, READERS, Call, Env, Rpc, command, larger_than, query
from pokdeng_service.application import access
from pokdeng_service.application import commands as c

SERVICE = "TableService"


def open_table(request: pb.OpenTableRequest) -> c.OpenTable:
    profile = convert.PROFILE_FROM_PB.get(int(request.profile), "")
    options = {"straights": request.options.straights, "ace_low": request.options.ace_low}
    seats = request.seats or 5 if profile == "ante" else request.seats  # ante has five fixed positions
    timeout = request.turn_timeout
    # whole seconds only: a fraction (or a negative duration) is refused with the turn_timeout's range
    seconds = timeout.seconds if timeout.nanos == 0 else -1
    return c.OpenTable(
        request.table_id,
        profile,
        options if profile == "classic" or any(options.values()) else None,
        min_stake=request.min_stake,
        max_stake=request.max_stake,
        seats=seats,
        dealer=request.dealer if request.HasField("dealer") else None,
        turn_timeout=seconds or limits.DEFAULT_TURN_TIMEOUT,
        currency=request.currency_code or currencies.DEFAULT,
    )


def get_table(env: Env, call: Call, request: pb.GetTableRequest) -> pb.GetTableResponse:
    f = Fields()
    f.ident("table_id", request.table_id)
    f.done()
    view = env.service.app_for(request.table_id).get_table(request.table_id)
    return pb.GetTableResponse(table=convert.table(access.table_for(call.principal, view)))


def list_tables(env: Env, _call: Call, request: pb.ListTablesRequest) -> pb.ListTablesResponse:
    f = Fields()
    size = f.page_size(request.page_size, limits.MAX_LIST_PAGE, default=limits.DEFAULT_PAGE)
    profile = f.choice("profile", int(request.profile), convert.PROFILE_FROM_PB)
    f.done()
    filters = {"profile": profile}
    cursor = paging.decode("ListTables", filters, request.page_token, env.token_key)
    after = paging.key_cursor(cursor) if cursor is not None else None
    listed = env.lists().list_tables(after, size + 1, profile)
    page, more = listed[:size], len(listed) > size
    token = paging.encode("ListTables", filters, page[-1].table_id, env.token_key) if more and page else ""
    return pb.ListTablesResponse(tables=[convert.table_summary(t) for t in page], next_page_token=token)


RPCS: tuple[Rpc, ...] = (
    command(SERVICE, "OpenTable", OPERATOR, open_table, table_reply),
    command(SERVICE, "TakeSeat", PLAYERS, lambda r: c.TakeSeat(r.table_id, r.player, r.seat), table_reply),
    command(
        SERVICE,
        "LeaveSeat",
        PLAYERS,
        lambda r: c.LeaveSeat(r.table_id, r.player, r.seat if r.HasField("seat") else None),
        table_reply,
    ),
    command(SERVICE, "BidForBanker", PLAYERS, lambda r: c.BidForBanker(r.table_id, r.player, r.rounds), table_reply),
    command(SERVICE, "CloseBankerBid", OPERATOR, lambda r: c.CloseBankerBid(r.table_id), table_reply),
    command(SERVICE, "DisconnectBanker", OPERATOR, lambda r: c.DisconnectBanker(r.table_id, r.player), table_reply),
    command(SERVICE, "ReconnectBanker", PLAYERS, lambda r: c.ReconnectBanker(r.table_id, r.player), table_reply),
    command(SERVICE, "CheckpointTable", OPERATOR, lambda r: c.CheckpointTable(r.table_id, r.period), table_reply),
    query(SERVICE, "GetTable", READERS, get_table),
    query(SERVICE, "ListTables", READERS, list_tables, costly=larger_than(limits.DEFAULT_PAGE)),
)
