"""The one declaration of the API's methods, and the one wrapper every call passes through.

Each service module (``wallets``, ``tables``, ``queries``, ``audit``, ``events``) declares its
methods as ``Rpc`` values: the method's name, the roles that may call it, and its body. A
command's body is made by ``command``: the request mapped to an application command, the
application's ``handle``, the reply built from the result. ``METHOD_ROLES`` and the server's
method handlers are derived from these declarations; nothing else lists methods.

``wrap`` is the cross-cutting work, done once for every call, in this order:

1. bytes that are not the method's request message are kept aside (refused in step 4);
2. authentication, once: the bearer token's ``Principal`` is handed to the body, which never
   reads the metadata again (UNAUTHENTICATED);
3. the role check against the method's declared roles (PERMISSION_DENIED);
4. malformed bytes: INVALID_ARGUMENT;
5. the deadline: a call whose deadline has passed is not started (DEADLINE_EXCEEDED);
6. the body; any error it raises ends the call through the one error map
   (``pokdeng_service.api.errors``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

from pokdeng_core.errors import InvalidCommand
from pokdeng_service.api.auth import Authenticator
from pokdeng_service.api.errors import DeadlineExpired, abort
from pokdeng_service.api.hub import EventHub
from pokdeng_service.api.v1 import pokdeng_pb2 as pb
from pokdeng_service.application.app import PokdengApp
from pokdeng_service.application.commands import Command
from pokdeng_service.application.errors import PermissionDenied
from pokdeng_service.application.principal import Principal, Role
from pokdeng_service.application.views import CommandResult

PACKAGE = "pokdeng.v1"
REPLAYED = "pokdeng-replayed"

OPERATOR = frozenset({Role.OPERATOR})
PLAYERS = frozenset({Role.OPERATOR, Role.PLAYER})
READERS = frozenset(Role)  # a player's reads are narrowed to what concerns it
AUDITORS = frozenset({Role.OPERATOR, Role.AUDITOR})


class Service(Protocol):
    """What the API needs of the application: ``PokdengApp`` or a ``PartitionedPokdeng``."""

    @property
    def apps(self) -> Sequence[PokdengApp]: ...

    def handle(self, principal: Principal, request_id: str, command: Command) -> CommandResult: ...

    def app_for(self, identifier: str, kind: str = "table") -> PokdengApp: ...


class RecentRounds(Protocol):
    """A read model that lists closed rounds (``pokdeng_service.readmodels.ReadModels``)."""

    def last_rounds(self, table_id: str | None = None, player: str | None = None, limit: int = 10) -> Sequence[Any]:
        """Summaries with a ``round_id``, oldest first."""
        ...


@dataclass(frozen=True)
class Env:
    """What every body may use: the application, the event hub, the read models and the feed's timing."""

    service: Service
    hub: EventHub
    recent: RecentRounds | None = None
    poll: float = 0.2
    heartbeat: float = 15.0


@dataclass(frozen=True)
class Call:
    """One call: who makes it, and grpc's context of it."""

    principal: Principal
    context: grpc.ServicerContext


Body = Callable[[Env, Call, Any], Any]


@dataclass(frozen=True)
class Rpc:
    """One method of the API: where it lives, who may call it, what it does."""

    service: str
    method: str
    roles: frozenset[Role]
    body: Body
    streaming: bool = False

    @property
    def path(self) -> str:
        return f"/{PACKAGE}.{self.service}/{self.method}"


def command(
    service: str,
    method: str,
    roles: frozenset[Role],
    to_command: Callable[[Any], Command],
    reply: Callable[[Env, Call, CommandResult], Any],
) -> Rpc:
    """A command method: map the request, let the application handle it, reply from the result."""

    def body(env: Env, call: Call, request: Any) -> Any:
        result = env.service.handle(call.principal, request.request_id, to_command(request))
        call.context.set_trailing_metadata(((REPLAYED, "true" if result.replayed else "false"),))
        if not result.replayed:
            env.hub.notify()
        return reply(env, call, result)

    return Rpc(service, method, roles, body)


def query(service: str, method: str, roles: frozenset[Role], body: Body) -> Rpc:
    return Rpc(service, method, roles, body)


def stream(service: str, method: str, roles: frozenset[Role], body: Body) -> Rpc:
    return Rpc(service, method, roles, body, streaming=True)


# --- the wrapper --------------------------------------------------------------------------------


class _Malformed:
    """What bytes that are not a valid request message deserialise to (refused after authentication)."""


def _tolerant(parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def deserialize(data: bytes) -> Any:
        try:
            return parse(data)
        except Exception:  # DecodeError, UnicodeDecodeError, ...: the bytes are not this message
            return _Malformed()

    return deserialize


def _begin(rpc: Rpc, authenticator: Authenticator, request: Any, context: grpc.ServicerContext) -> Call:
    principal = authenticator.principal(context.invocation_metadata())
    if principal.role not in rpc.roles:
        raise PermissionDenied(
            f"{principal.describe()} may not call {rpc.method}", method=rpc.path, role=principal.role.value
        )
    if isinstance(request, _Malformed):
        raise InvalidCommand("the request is not a valid protobuf message of this method", field="request")
    remaining = context.time_remaining()
    if remaining is not None and remaining <= 0:
        raise DeadlineExpired("the call's deadline passed before it could run")
    return Call(principal, context)


def wrap(rpc: Rpc, env: Env, authenticator: Authenticator) -> grpc.RpcMethodHandler[Any, Any]:
    """The method handler of ``rpc``: every call through authentication, roles, deadline and the error map."""
    descriptor = pb.DESCRIPTOR.services_by_name[rpc.service].methods_by_name[rpc.method]
    request_class = getattr(pb, descriptor.input_type.name)
    response_class = getattr(pb, descriptor.output_type.name)
    deserialize = _tolerant(request_class.FromString)
    serialize = response_class.SerializeToString

    if rpc.streaming:

        def run_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            try:
                call = _begin(rpc, authenticator, request, context)
                yield from rpc.body(env, call, request)
                return
            except Exception as exc:  # every error is mapped, unknown ones to INTERNAL
                error = exc
            abort(context, error)

        return grpc.unary_stream_rpc_method_handler(run_stream, deserialize, serialize)

    def run(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return rpc.body(env, _begin(rpc, authenticator, request, context), request)
        except Exception as exc:  # every error is mapped, unknown ones to INTERNAL
            error = exc
        abort(context, error)

    return grpc.unary_unary_rpc_method_handler(run, deserialize, serialize)


def generic_handlers(rpcs: Iterable[Rpc], env: Env, authenticator: Authenticator) -> list[grpc.GenericRpcHandler]:
    """One generic handler per service, with every declared method wrapped."""
    by_service: dict[str, dict[str, grpc.RpcMethodHandler[Any, Any]]] = {}
    for rpc in rpcs:
        by_service.setdefault(f"{PACKAGE}.{rpc.service}", {})[rpc.method] = wrap(rpc, env, authenticator)
    return [grpc.method_handlers_generic_handler(name, handlers) for name, handlers in by_service.items()]


__all__ = [
    "AUDITORS",
    "OPERATOR",
    "PLAYERS",
    "READERS",
    "Call",
    "Env",
    "RecentRounds",
    "Rpc",
    "Service",
    "command",
    "generic_handlers",
    "query",
    "stream",
    "wrap",
]
