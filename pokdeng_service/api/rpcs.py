"""The one declaration of the API's methods, and the one wrapper every call passes through.

Each service module (``wallets``, ``tables``, ``queries``, ``audit``, ``events``) declares its
methods as ``Rpc`` values: the method's name, the roles that may call it, and its body. A
command's body is made by ``command``: the request mapped to an application command, the
application's ``handle``, the reply built from the result. ``METHOD_ROLES`` and the server's
method handlers are derived from these declarations; nothing else lists methods. Health and
reflection (``api/health.py``, ``api/server.py``) are declared the same way and pass through
the same wrapper.

The wrapper every call passes through is ``api/wrapper.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, Unpack

import grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service import server_limits
from pokdeng_service.api.admission import Limits as Limits
from pokdeng_service.api.admission import Observer as Observer
from pokdeng_service.api.admission import Runtime as Runtime
from pokdeng_service.api.admission import StreamWatch, caller_key
from pokdeng_service.api.hub import EventHub
from pokdeng_service.application.app import PokdengApp
from pokdeng_service.application.commanding import Command
from pokdeng_service.application.errors import NoReadModels
from pokdeng_service.application.principal import Principal, Role
from pokdeng_service.application.views import CommandResult

if TYPE_CHECKING:  # (the read models are the server's to load: the API names their filter's arguments only)
    from pokdeng_service.readmodels.paging import RoundFilterArgs

T = TypeVar("T")
PACKAGE = "pokdeng.v1"
REPLAYED = "pokdeng-replayed"
log = logging.getLogger("pokdeng.api")

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
    """The read models the List methods read (``readmodels.ReadModels``, ``readmodels.PartitionedReadModels``)."""

    def last_rounds(self, table_id: str | None = None, player: str | None = None, limit: int = 10) -> Sequence[Any]:
        """Summaries with a ``round_id``, oldest first."""
        ...

    def list_tables(self, after: str | None, limit: int, profile: str | None = None) -> Sequence[Any]: ...

    def list_wallets(self, after: str | None, limit: int) -> Sequence[Any]: ...

    def page_rounds(
        self, *, cursor: Sequence[int] | None = None, limit: int = 10, **filters: Unpack[RoundFilterArgs]
    ) -> Any:
        """A ``readmodels.RoundsPage``: closed rounds newest first and ``next_cursor`` (None: the last page)."""
        ...


@dataclass(frozen=True)
class Env:
    """What every body may use: the application, the event hub, the read models and the feed's timing."""

    service: Service
    hub: EventHub
    recent: RecentRounds | None = None
    poll: float = server_limits.POLL_INTERVAL
    heartbeat: float = server_limits.HEARTBEAT
    token_key: bytes = b""  # authenticates page and resume tokens (api/paging.py; ``SeedVault.token_key``)
    runtime: Runtime | None = None  # the fair workers, for a stream's pieces of work (``fairly``)

    def fairly(self, call: Call, work: Callable[[], T], *, costly: bool = False) -> T:
        """``work()`` on a worker's turn of the call's caller (``Runtime.run``): a stream's reads take their
        share of the workers as unary calls do, so one caller's streams cannot crowd out the others; a
        ``costly`` read (a page of a stream's history) also waits for a costly slot, as the audits do."""
        if self.runtime is None:
            return work()
        return self.runtime.run(caller_key(call.principal, call.context), call.context, work, costly=costly)

    def lists(self) -> RecentRounds:
        """The read models, for the List methods (FAILED_PRECONDITION on a server that keeps none)."""
        if self.recent is None:
            raise NoReadModels("this server keeps no read models: it cannot list (serve with read models on)")
        return self.recent


@dataclass(frozen=True)
class Call:
    """One call: who makes it, grpc's context of it, and for a stream what the server's housekeeping sees."""

    principal: Principal
    context: grpc.ServicerContext
    watch: StreamWatch | None = None

    def active(self) -> bool:
        """Whether the call goes on: its client is there and the server has not told the stream to end
        (idle, or its place given to another caller). A stream's body looks before each wait."""
        return self.context.is_active() and (self.watch is None or self.watch.active)


Body = Callable[[Env, Any, Any], Any]
"""``(Env, Call, request) -> reply``; a streaming body returns an iterator of replies (a bidirectional
one gets the iterator of requests). An ``open`` method's body gets grpc's context in place of the
``Call`` (there is no principal)."""


@dataclass(frozen=True)
class Rpc:
    """One method of the API: where it lives, who may call it, what it does.

    ``pokdeng.v1`` methods take their messages from the package's descriptor; others (health,
    reflection) name their package and messages. ``open``: no token is asked for (the roles are
    not checked). ``on_loop``: the unary body is cheap and never blocks: it needs no worker.
    ``store``: the method needs the store (refused while the store is unreachable). ``kind``: the
    group of streams that share a cap (``Limits.streams``). ``log_level``: of its line in the call log.
    ``costly``: the body replays or proves a whole stream (the audits), or, a predicate of the request,
    reads a large page (``larger_than``): it runs only in one of the few costly slots
    (``Limits.costly_workers``), so that such calls, many times a cheap call's work, never take more
    than those slots' share of the interpreter from everyone else's calls. ``writes``: a command (its
    rate class). ``heartbeat``: of a server stream that follows a log, which replies are heartbeats;
    such a stream ends when it had nothing else to send for ``Limits.stream_idle`` seconds (its body
    checks ``Call.active`` before each wait).
    """

    service: str
    method: str
    roles: frozenset[Role]
    body: Body
    streaming: bool = False  # a server stream
    client_streaming: bool = False  # and a client stream (a bidirectional one: reflection)
    package: str = PACKAGE
    request_type: Any = None
    response_type: Any = None
    open: bool = False
    on_loop: bool = False
    store: bool = True
    kind: str = ""
    log_level: int = logging.INFO
    costly: bool | Callable[[Any], bool] = False
    writes: bool = False
    heartbeat: Callable[[Any], bool] | None = None

    @property
    def rate_class(self) -> str:
        """Whose bucket a call takes a token of (``api/rates.py``): ``streams``, ``commands`` or ``reads``."""
        return "streams" if self.streaming else "commands" if self.writes else "reads"

    def is_costly(self, request: Any) -> bool:
        return self.costly(request) if callable(self.costly) else self.costly

    @property
    def full_service(self) -> str:
        return f"{self.package}.{self.service}" if self.package else self.service

    @property
    def path(self) -> str:
        return f"/{self.full_service}/{self.method}"

    @property
    def name(self) -> str:
        """The method as metrics and logs name it: ``pokdeng.v1.RoundService/PlaceBet``."""
        return f"{self.full_service}/{self.method}"

    @property
    def stream_kind(self) -> str:
        return self.kind or self.name


Reply = Callable[[Env, Call, CommandResult], Mapping[str, Any]]
"""A command's reply: the fields of the method's response message (``XxxResponse``), from the result."""


def response_class(service: str, method: str) -> Any:
    """The response message class of ``pokdeng.v1.<service>/<method>``."""
    return getattr(pb, pb.DESCRIPTOR.services_by_name[service].methods_by_name[method].output_type.name)


def command(
    service: str,
    method: str,
    roles: frozenset[Role],
    to_command: Callable[[Any], Command],
    reply: Reply,
) -> Rpc:
    """A command method: map the request, let the application handle it, reply from the result."""
    response = response_class(service, method)

    def body(env: Env, call: Call, request: Any) -> Any:
        result = env.service.handle(call.principal, request.request_id, to_command(request))
        call.context.set_trailing_metadata(((REPLAYED, "true" if result.replayed else "false"),))
        if not result.replayed:
            env.hub.notify()
        return response(**reply(env, call, result))

    return Rpc(service, method, roles, body, writes=True)


def query(
    service: str, method: str, roles: frozenset[Role], body: Body, *, costly: bool | Callable[[Any], bool] = False
) -> Rpc:
    return Rpc(service, method, roles, body, costly=costly)


def larger_than(size: int) -> Callable[[Any], bool]:
    """A List method's cost: a page of more than ``size`` items (its default page) is costly."""

    def large(request: Any) -> bool:
        return int(request.page_size) > size

    return large


def stream(
    service: str,
    method: str,
    roles: frozenset[Role],
    body: Body,
    kind: str = "",
    heartbeat: Callable[[Any], bool] | None = None,
) -> Rpc:
    """A server stream: ``body`` returns an iterator of replies (capped with the other streams of ``kind``);
    ``heartbeat``: which replies are heartbeats (then the stream ends when it had nothing else to send for
    its idle limit, and ``body`` checks ``Call.active`` before each wait)."""
    return Rpc(service, method, roles, body, streaming=True, kind=kind, heartbeat=heartbeat)


__all__ = [
    "AUDITORS",
    "OPERATOR",
    "PLAYERS",
    "READERS",
    "Call",
    "Env",
    "Limits",
    "Observer",
    "RecentRounds",
    "Rpc",
    "Runtime",
    "Service",
    "StreamWatch",
    "command",
    "query",
    "stream",
]
