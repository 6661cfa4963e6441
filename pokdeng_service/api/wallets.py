"""The Wallets service: open, deposit, withdraw; a wallet and its statement."""

from __future__ import annotations

from pokdeng_core import limits
from pokdeng_service.api import convert
from pokdeng_service.api.replies import wallet_reply
from pokdeng_service.api.requests import Fields
from pokdeng_service.api.rpcs import OPERATOR, READERS, Call, Env, Rpc, command, query
from pokdeng_service.api.v1 import pokdeng_pb2 as pb
from pokdeng_service.application import access
from pokdeng_service.application.commands import Deposit, OpenWallet, Withdraw


def get_wallet(env: Env, call: Call, request: pb.GetWalletRequest) -> pb.Wallet:
    f = Fields()
    f.ident("wallet_id", request.wallet_id)
    f.done()
    access.require_reader(call.principal, request.wallet_id, "read the wallet")
    return convert.wallet(env.service.app_for(request.wallet_id, "wallet").get_wallet(request.wallet_id))


def get_statement(env: Env, call: Call, request: pb.GetStatementRequest) -> pb.WalletStatement:
    f = Fields()
    f.ident("wallet_id", request.wallet_id)
    limit = f.between("limit", request.limit, 1, limits.MAX_STATEMENT_PAGE, default=100)
    if request.after < 0:
        f.bad("after", "after must not be negative")
    f.done()
    access.require_reader(call.principal, request.wallet_id, "read the statement")
    app = env.service.app_for(request.wallet_id, "wallet")
    lines = app.wallet_statement(request.wallet_id, after=request.after, limit=limit)
    return convert.statement(request.wallet_id, lines, request.after)


RPCS: tuple[Rpc, ...] = (
    command("Wallets", "OpenWallet", OPERATOR, lambda r: OpenWallet(r.wallet_id), wallet_reply),
    command("Wallets", "Deposit", OPERATOR, lambda r: Deposit(r.wallet_id, r.amount), wallet_reply),
    command("Wallets", "Withdraw", OPERATOR, lambda r: Withdraw(r.wallet_id, r.amount), wallet_reply),
    query("Wallets", "GetWallet", READERS, get_wallet),
    query("Wallets", "GetStatement", READERS, get_statement),
)
