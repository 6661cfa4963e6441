"""The WalletService: open, deposit, withdraw; a wallet, the wallets, a wallet's statement; a player's session with the
platform's wallet (``OpenWalletSession``: its reply names the session, never its token)."""

from __future__ import annotations

from typing import Any

from pokdeng_client.chain import timestamp_of
from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core import currencies, limits
from pokdeng_service.api import convert, paging
from pokdeng_service.api.replies import wallet_reply
from pokdeng_service.api.requests import Fields
from pokdeng_service.api.rpcs import AUDITORS, OPERATOR, READERS, Call, Env, Rpc, command, larger_than, query
from pokdeng_service.application import access
from pokdeng_service.application.commands import Deposit, OpenWallet, OpenWalletSession, Withdraw
from pokdeng_service.application.views import CommandResult

SERVICE = "WalletService"


def open_wallet(request: pb.OpenWalletRequest) -> OpenWallet:
    return OpenWallet(request.wallet_id, request.currency_code or currencies.DEFAULT)


def open_wallet_session(request: pb.OpenWalletSessionRequest) -> OpenWalletSession:
    return OpenWalletSession(
        request.player, request.token, request.currency_code or currencies.DEFAULT, request.game_code
    )


def session_reply(_env: Env, _call: Call, result: CommandResult) -> dict[str, Any]:
    """The session the command recorded (its ``Started`` event; on a retry, the first call's), without its token."""
    started = next(e for e in reversed(result.events) if e.kind == "Started")
    session = pb.WalletSession(
        player=result.id, session_number=int(started.data["number"]),
        currency=convert.currency(started.data["currency"]), game_code=str(started.data["game_code"]),
        open_time=timestamp_of(started.timestamp),
    )  # fmt: skip
    return {"request_id": result.request_id, "session": session}


def get_wallet(env: Env, call: Call, request: pb.GetWalletRequest) -> pb.GetWalletResponse:
    f = Fields()
    f.ident("wallet_id", request.wallet_id)
    f.done()
    access.require_reader(call.principal, request.wallet_id, "read the wallet")
    view = env.service.app_for(request.wallet_id, "wallet").get_wallet(request.wallet_id)
    return pb.GetWalletResponse(wallet=convert.wallet(view))


def list_wallets(env: Env, _call: Call, request: pb.ListWalletsRequest) -> pb.ListWalletsResponse:
    f = Fields()
    size = f.page_size(request.page_size, limits.MAX_LIST_PAGE, default=limits.DEFAULT_PAGE)
    f.done()
    cursor = paging.decode("ListWallets", {}, request.page_token, env.token_key)
    after = paging.key_cursor(cursor) if cursor is not None else None
    listed = env.lists().list_wallets(after, size + 1)
    page, more = listed[:size], len(listed) > size
    token = paging.encode("ListWallets", {}, page[-1].wallet_id, env.token_key) if more and page else ""
    return pb.ListWalletsResponse(wallets=[convert.wallet_balance(w) for w in page], next_page_token=token)


def list_statement_entries(
    env: Env, call: Call, request: pb.ListStatementEntriesRequest
) -> pb.ListStatementEntriesResponse:
    f = Fields()
    f.ident("wallet_id", request.wallet_id)
    size = f.page_size(request.page_size, limits.MAX_STATEMENT_PAGE, default=limits.DEFAULT_PAGE)
    f.done()
    filters = {"wallet_id": request.wallet_id}
    cursor = paging.decode("ListStatementEntries", filters, request.page_token, env.token_key)
    after = paging.int_cursor(cursor) if cursor is not None else 0
    access.require_reader(call.principal, request.wallet_id, "read the statement")
    app = env.service.app_for(request.wallet_id, "wallet")
    lines = app.wallet_statement(request.wallet_id, after=after, limit=size)
    last = lines[-1].position if lines else after
    # A full page may have more after it; a short one reaches the end so far (its token reads what comes later).
    token = paging.encode("ListStatementEntries", filters, last, env.token_key) if len(lines) == size else ""
    return pb.ListStatementEntriesResponse(
        wallet_id=request.wallet_id, entries=[convert.statement_entry(line) for line in lines], next_page_token=token
    )


RPCS: tuple[Rpc, ...] = (
    command(SERVICE, "OpenWallet", OPERATOR, open_wallet, wallet_reply),
    command(SERVICE, "Deposit", OPERATOR, lambda r: Deposit(r.wallet_id, r.amount), wallet_reply),
    command(SERVICE, "Withdraw", OPERATOR, lambda r: Withdraw(r.wallet_id, r.amount), wallet_reply),
    query(SERVICE, "GetWallet", READERS, get_wallet),
    query(SERVICE, "ListWallets", AUDITORS, list_wallets, costly=larger_than(limits.DEFAULT_PAGE)),
    query(SERVICE, "ListStatementEntries", READERS, list_statement_entries, costly=larger_than(limits.DEFAULT_PAGE)),
    command(SERVICE, "OpenWalletSession", OPERATOR, open_wallet_session, session_reply),
)
