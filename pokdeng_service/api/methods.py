"""Every method of the API, from the services' declarations, and the roles that may call each."""

from __future__ import annotations

from pokdeng_service.api import audit, checkpoints, events, rounds, tables, wallets, watch
from pokdeng_service.api.rpcs import Rpc
from pokdeng_service.application.principal import Role

RPCS: tuple[Rpc, ...] = (
    *wallets.RPCS,
    *tables.RPCS,
    *rounds.RPCS,
    *watch.RPCS,
    *audit.RPCS,
    *checkpoints.RPCS,
    *events.RPCS,
)
"""Every method of the API; a method missing here is not served."""

METHOD_ROLES: dict[str, frozenset[Role]] = {rpc.path: rpc.roles for rpc in RPCS}
"""Every method of the API and the roles that may call it (derived from ``RPCS``)."""
