"""Replies to commands, built from the command's result (the stream's view as saved: no read back)."""

from __future__ import annotations

from pokdeng_service.api import convert
from pokdeng_service.api.rpcs import Call, Env
from pokdeng_service.api.v1 import pokdeng_pb2 as pb
from pokdeng_service.application import access
from pokdeng_service.application.principal import Role
from pokdeng_service.application.views import CommandResult, RoundView, TableView, WalletView


def viewer(call: Call) -> str | None:
    """The player whose view of a round applies, or None for operators and auditors (they see everything)."""
    return call.principal.player if call.principal.role is Role.PLAYER else None


def wallet_reply(env: Env, _call: Call, result: CommandResult) -> pb.WalletCommandResponse:
    view = result.view
    if not isinstance(view, WalletView):  # a retry: read the wallet as it is now
        view = env.service.app_for(result.id, "wallet").get_wallet(result.id)
    return pb.WalletCommandResponse(
        request_id=result.request_id, events=convert.recorded_events(result.events), wallet=convert.wallet(view)
    )


def table_reply(env: Env, call: Call, result: CommandResult) -> pb.TableCommandResponse:
    view = result.view
    if not isinstance(view, TableView):
        view = env.service.app_for(result.id).get_table(result.id)
    view = access.table_for(call.principal, view)
    return pb.TableCommandResponse(
        request_id=result.request_id, events=convert.recorded_events(result.events), table=convert.table(view)
    )


def round_reply(env: Env, call: Call, result: CommandResult) -> pb.RoundCommandResponse:
    app = env.service.app_for(result.id, "round")
    view = result.view
    player = viewer(call)
    if not isinstance(view, RoundView):  # a retry: read the round as it is now
        view = app.get_round(result.id)
    seen = convert.visibility_for(player, view)
    return pb.RoundCommandResponse(
        request_id=result.request_id,
        events=convert.recorded_events(result.events, seen),
        round=convert.round_(view, seen, with_events=False),
    )
