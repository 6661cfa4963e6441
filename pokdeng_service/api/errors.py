"""The one map from errors to gRPC status codes, with ``google.rpc`` details (through grpcio-status).

=====================================  ===================  ===============================================
Error                                  gRPC code            Details
=====================================  ===================  ===============================================
``RequestInvalid`` (servicer checks)   INVALID_ARGUMENT     BadRequest: every field violation found;
``InvalidCommand`` (core, app)                              ErrorInfo reason ``INVALID_ARGUMENT``
``DuplicateRequest``                   INVALID_ARGUMENT     BadRequest on ``request_id``; ErrorInfo reason
                                                            ``DUPLICATE_REQUEST`` (the client reused an id for a
                                                            different command: a client bug, never retried;
                                                            ALREADY_EXISTS is kept for ids of tables/wallets)
``InsufficientFunds``                  FAILED_PRECONDITION  ErrorInfo reason ``INSUFFICIENT_FUNDS`` with
                                                            ``required``, ``available``, ``wallet`` metadata;
                                                            PreconditionFailure (type ``INSUFFICIENT_FUNDS``)
``CurrencyMismatch``,                  FAILED_PRECONDITION  ErrorInfo ``CURRENCY_MISMATCH`` (a wallet stakes at a
``NoReadModels``                                            table of another currency), ``NO_READ_MODELS`` (a List
                                                            method on a server without read models)
``WrongPhase``, ``NotYourTurn``,       FAILED_PRECONDITION  ErrorInfo reason = the error's ``code`` in upper
``UnknownSeat``, ``SealedShoe`` and                         case (``WRONG_PHASE``, ``NOT_YOUR_TURN``,
any other ``DomainError`` (a rule)                          ``UNKNOWN_SEAT``, ``RULE_VIOLATION`` ...), its
                                                            details as metadata; PreconditionFailure
``VaultError`` (a seed that cannot be  FAILED_PRECONDITION  as ``SealedShoe``: ErrorInfo ``SEALED_SHOE``
unsealed: a lost or wrong vault key)
``WalletSessionMissing``,              FAILED_PRECONDITION  ErrorInfo ``WALLET_SESSION_MISSING`` (metadata ``player``:
``WalletSessionRejected`` (``--wallet                       no session handed over, nothing sent to Hub88),
hub88``, docs/wallet.md)                                    ``WALLET_SESSION_REJECTED`` (``player``, ``status``: Hub88
                                                            refused its token; the debit is rolled back)
``NotFound``                           NOT_FOUND            ErrorInfo ``NOT_FOUND``; ResourceInfo
``AlreadyExists``                      ALREADY_EXISTS       ErrorInfo ``ALREADY_EXISTS``; ResourceInfo
``Conflict``                           ABORTED              ErrorInfo ``CONFLICT``; RetryInfo (retry the same
                                                            request id: it is safe)
``StreamForged``                       DATA_LOSS            ErrorInfo ``STREAM_FORGED`` with ``stream``, ``id``,
                                                            ``uuid`` metadata; ResourceInfo. A stored stream is
                                                            not what it claims (docs/audit.md): the record is
                                                            corrupt, a retry cannot help; an operator must look
``Unauthenticated`` (auth)             UNAUTHENTICATED      ErrorInfo ``UNAUTHENTICATED``
``PermissionDenied`` (auth)            PERMISSION_DENIED    ErrorInfo ``PERMISSION_DENIED``
``Unavailable`` (shutting down)        UNAVAILABLE          ErrorInfo ``SHUTTING_DOWN``
``WalletUnavailable`` (the platform's  UNAVAILABLE          ErrorInfo ``WALLET_UNAVAILABLE`` with ``tx_id``
wallet did not answer a stake's                             metadata; RetryInfo (the debit is rolled back: retry
debit, docs/wallet.md)                                      the same request id)
``StoreDown`` (the store probe), the   UNAVAILABLE          ErrorInfo ``STORE_UNAVAILABLE``; RetryInfo (retry the
store driver's connection errors                            same request id once the store answers: health says
(``OperationalError``, ``InterfaceError``                   when). Nothing was written: a command is one
of the library, psycopg's, sqlite3's)                       transaction
``StreamIdle`` (a watch or feed that    CANCELLED            ErrorInfo ``STREAM_IDLE`` with ``seconds``; the
had nothing but heartbeats to send for                      server ends it (``Runtime.reap``): call again with the
``Limits.stream_idle`` seconds)                             last resume token (a feed: after its last position)
``StreamStalled`` (a stream whose       CANCELLED            the server cancels it (``Runtime.reap``) with this
client took no reply, or sent no                            code and message (no details: its thread is blocked
request, for ``Limits.stream_idle``                         in grpc's send); resume as above
seconds)
``StreamPreempted`` (a full kind of     RESOURCE_EXHAUSTED   ErrorInfo ``STREAM_PREEMPTED`` with ``limit``: the
streams, and a caller holding at least                      stream was ended to make room for a caller that held
two more of them than a newcomer)                           fewer (``Runtime.open_stream``); try again later
``DeadlineExpired``                    DEADLINE_EXCEEDED    (the call's deadline passed before the app ran)
``ResourceExhausted``                  RESOURCE_EXHAUSTED   ErrorInfo ``RESOURCE_EXHAUSTED`` with ``limit``
(calls in flight, per caller, streams                       metadata
of a kind)
``RateLimited`` (a caller past its     RESOURCE_EXHAUSTED   ErrorInfo ``RATE_LIMITED`` with ``class``, ``rate``,
class's rate: ``Limits.rates``)                             ``burst``; RetryInfo: the time until its bucket holds
                                                            a token again
``OutOfRange`` (SubscribeEvents after   OUT_OF_RANGE         ErrorInfo ``OUT_OF_RANGE`` with ``position``, ``head``
a position past the log's head)
anything else                          INTERNAL             "internal error (reference <id>)"; the traceback is
                                                            logged with that reference, never sent
=====================================  ===================  ===============================================

Every ErrorInfo has domain ``pokdeng``. The status message is the error's own
message (what and why), which never contains a traceback.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

from pokdeng_core.errors import DomainError, InsufficientFunds, InvalidCommand, SealedShoe
from pokdeng_service.application.errors import (
    AlreadyExists,
    Conflict,
    DuplicateRequest,
    FieldViolation,
    NotFound,
    PermissionDenied,
    RequestInvalid,
    StreamForged,
    WalletUnavailable,
)
from pokdeng_service.store.vault import VaultError

DOMAIN = "pokdeng"
log = logging.getLogger("pokdeng.api")


# --- errors raised by the API layer itself -------------------------------------------------------


class ApiError(Exception):
    """An error of the API layer (authentication, authorization, server state) with its own code."""

    code: grpc.StatusCode = grpc.StatusCode.INTERNAL
    reason = "INTERNAL"

    def __init__(self, message: str, **metadata: str) -> None:
        super().__init__(message)
        self.message = message
        self.metadata = metadata


class Unauthenticated(ApiError):
    code = grpc.StatusCode.UNAUTHENTICATED
    reason = "UNAUTHENTICATED"


class Unavailable(ApiError):
    code = grpc.StatusCode.UNAVAILABLE
    reason = "SHUTTING_DOWN"


class DeadlineExpired(ApiError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED
    reason = "DEADLINE_EXCEEDED"


class ResourceExhausted(ApiError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED
    reason = "RESOURCE_EXHAUSTED"


class RateLimited(ResourceExhausted):
    """A caller past the rate of its class of methods (``Limits.rates``): ``retry_after`` seconds until a token."""

    reason = "RATE_LIMITED"

    def __init__(self, message: str, retry_after: float, **metadata: str) -> None:
        super().__init__(message, **metadata)
        self.retry_after = retry_after


class StreamPreempted(ResourceExhausted):
    """A stream ended to make room for a caller that held fewer of its kind (``Runtime.open_stream``)."""

    reason = "STREAM_PREEMPTED"


class StreamIdle(ApiError):
    """A stream that had nothing but heartbeats to send for its idle limit: the client calls again."""

    code = grpc.StatusCode.CANCELLED
    reason = "STREAM_IDLE"


class StreamStalled(ApiError):
    """A stream whose client took no reply (or sent no request) for its idle limit."""

    code = grpc.StatusCode.CANCELLED
    reason = "STREAM_STALLED"


class OutOfRange(ApiError):
    """A position past the end of what is recorded (SubscribeEvents' ``after_position`` past the head)."""

    code = grpc.StatusCode.OUT_OF_RANGE
    reason = "OUT_OF_RANGE"


class StoreDown(ApiError):
    """The event store does not answer (the store probe says so, or the driver could not reach it)."""

    code = grpc.StatusCode.UNAVAILABLE
    reason = "STORE_UNAVAILABLE"


def _store_errors() -> tuple[type[BaseException], ...]:
    """The exceptions by which the store's drivers say the store cannot be reached (or timed out)."""
    import sqlite3

    from eventsourcing.persistence import InterfaceError, OperationalError

    from pokdeng_service.store.bounded import StoreUnreachable

    found: list[type[BaseException]] = [OperationalError, InterfaceError, sqlite3.OperationalError, StoreUnreachable]
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        pass
    else:
        found += [psycopg.OperationalError, psycopg.InterfaceError]
    return tuple(found)


STORE_ERRORS = _store_errors()


# --- the map -----------------------------------------------------------------------------------


def _pack(*messages: object) -> list[any_pb2.Any]:
    out = []
    for message in messages:
        packed = any_pb2.Any()
        packed.Pack(message)  # type: ignore[arg-type]
        out.append(packed)
    return out


def _metadata(details: Mapping[str, object]) -> dict[str, str]:
    return {str(k): str(v) for k, v in details.items() if v is not None and v != ""}


def _info(reason: str, metadata: Mapping[str, str] | None = None) -> error_details_pb2.ErrorInfo:
    return error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN, metadata=dict(metadata or {}))


def _status(code: grpc.StatusCode, message: str, *details: object) -> status_pb2.Status:
    rpc_code = getattr(code_pb2, code.name)
    return status_pb2.Status(code=rpc_code, message=message, details=_pack(*details))


def _resource(exc: DomainError) -> error_details_pb2.ResourceInfo:
    kind, name = next(iter(exc.details.items()), ("", ""))
    return error_details_pb2.ResourceInfo(resource_type=str(kind), resource_name=str(name), description=exc.message)


def _retry(seconds: float = 0.5) -> error_details_pb2.RetryInfo:
    whole = int(seconds)
    delay = duration_pb2.Duration(seconds=whole, nanos=min(999_999_999, round((seconds - whole) * 1e9)))
    return error_details_pb2.RetryInfo(retry_delay=delay)


def _one_line(exc: BaseException) -> str:
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__


def reason_of(status: status_pb2.Status) -> str:
    """The ErrorInfo reason of a status made by ``status_for`` ("" if none)."""
    for packed in status.details:
        if packed.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            packed.Unpack(info)
            return str(info.reason)
    return ""


def status_for(exc: BaseException) -> status_pb2.Status:
    """The ``google.rpc.Status`` (code, message, details) that reports ``exc`` to a client: the first row of
    ``_REPORTS`` whose type ``exc`` is, else INTERNAL (logged with a reference the client is told)."""
    if isinstance(exc, VaultError):  # the round's seed cannot be unsealed (a lost or wrong key): its shoe is sealed
        exc = SealedShoe(str(exc))
    for kinds, report in _REPORTS:
        if isinstance(exc, kinds):
            return report(exc)
    return _internal(exc)


Report = Callable[[Any], status_pb2.Status]
"""How one kind of error is reported: its ``google.rpc.Status``."""


def _detailed(code: grpc.StatusCode, reason: str, extra: Callable[[Any], object]) -> Report:
    """The common shape: ``code``, the message, ErrorInfo ``reason`` with the error's details, one more detail."""

    def report(exc: Any) -> status_pb2.Status:
        return _status(code, exc.message, _info(reason, _metadata(exc.details)), extra(exc))

    return report


def _api_error(exc: ApiError, *retry: error_details_pb2.RetryInfo) -> status_pb2.Status:
    return _status(exc.code, exc.message, _info(exc.reason, exc.metadata), *retry)


def _denied(exc: PermissionDenied) -> status_pb2.Status:
    return _status(grpc.StatusCode.PERMISSION_DENIED, exc.message, _info(exc.reason, exc.metadata))


def _store_failed(exc: BaseException) -> status_pb2.Status:
    # the driver's message names the host, never a password
    log.warning("the event store failed a call: %s: %s", type(exc).__name__, _one_line(exc))
    message = "the event store is unreachable or did not answer in time: try again"
    return _status(grpc.StatusCode.UNAVAILABLE, message, _info("STORE_UNAVAILABLE"), _retry())


def _duplicate(exc: DuplicateRequest) -> status_pb2.Status:
    violation = error_details_pb2.BadRequest.FieldViolation(field="request_id", description=exc.message)
    return _status(
        grpc.StatusCode.INVALID_ARGUMENT,
        exc.message,
        error_details_pb2.BadRequest(field_violations=[violation]),
        _info("DUPLICATE_REQUEST", _metadata(exc.details)),
    )


def _invalid(exc: InvalidCommand) -> status_pb2.Status:
    pairs = exc.violations if isinstance(exc, RequestInvalid) else (FieldViolation(exc.field, exc.message),)
    violations = [error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description) for v in pairs]
    return _status(
        grpc.StatusCode.INVALID_ARGUMENT,
        exc.message,
        error_details_pb2.BadRequest(field_violations=violations),
        _info("INVALID_ARGUMENT", _metadata({"field": exc.field, **exc.details})),
    )


def _forged(exc: StreamForged) -> error_details_pb2.ResourceInfo:
    return error_details_pb2.ResourceInfo(
        resource_type=str(exc.details.get("stream", "")),
        resource_name=str(exc.details.get("id", "")),
        description=exc.message,
    )


def _insufficient(exc: InsufficientFunds) -> status_pb2.Status:
    metadata = {"required": str(exc.required), "available": str(exc.available), "wallet": exc.wallet}
    violation = error_details_pb2.PreconditionFailure.Violation(
        type="INSUFFICIENT_FUNDS", subject=f"wallet:{exc.wallet}", description=exc.message
    )
    failure = error_details_pb2.PreconditionFailure(violations=[violation])
    return _status(grpc.StatusCode.FAILED_PRECONDITION, exc.message, _info("INSUFFICIENT_FUNDS", metadata), failure)


def _domain(exc: DomainError) -> status_pb2.Status:
    reason = exc.code.upper()
    failure = error_details_pb2.PreconditionFailure(
        violations=[error_details_pb2.PreconditionFailure.Violation(type=reason, description=exc.message)]
    )
    return _status(grpc.StatusCode.FAILED_PRECONDITION, exc.message, _info(reason, _metadata(exc.details)), failure)


def _internal(exc: BaseException) -> status_pb2.Status:
    reference = secrets.token_hex(6)
    log.error("internal error (reference %s)", reference, exc_info=(type(exc), exc, exc.__traceback__))
    return _status(
        grpc.StatusCode.INTERNAL, f"internal error (reference {reference})", _info("INTERNAL", {"reference": reference})
    )


_CONFLICT_RETRY = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(nanos=50_000_000))

_REPORTS: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], Report], ...] = (
    (StoreDown, lambda exc: _api_error(exc, _retry())),
    (RateLimited, lambda exc: _api_error(exc, _retry(exc.retry_after))),
    (ApiError, _api_error),
    (STORE_ERRORS, _store_failed),
    (PermissionDenied, _denied),
    (DuplicateRequest, _duplicate),
    (InvalidCommand, _invalid),
    (NotFound, _detailed(grpc.StatusCode.NOT_FOUND, "NOT_FOUND", _resource)),
    (AlreadyExists, _detailed(grpc.StatusCode.ALREADY_EXISTS, "ALREADY_EXISTS", _resource)),
    (StreamForged, _detailed(grpc.StatusCode.DATA_LOSS, "STREAM_FORGED", _forged)),
    (Conflict, _detailed(grpc.StatusCode.ABORTED, "CONFLICT", lambda _exc: _CONFLICT_RETRY)),
    # no answer: transient, as the store's (not a rule of the game)
    (WalletUnavailable, _detailed(grpc.StatusCode.UNAVAILABLE, "WALLET_UNAVAILABLE", lambda _exc: _retry())),
    (InsufficientFunds, _insufficient),
    (DomainError, _domain),
)
"""The reports in order, the more specific type first: a subclass's row before its base's."""


# --- reading the details back (clients, tests) -------------------------------------------------


@dataclass(frozen=True)
class ErrorDetails:
    """What a client can read from a failed call's ``google.rpc.Status``."""

    code: grpc.StatusCode
    message: str
    reason: str = ""
    metadata: Mapping[str, str] | None = None
    field_violations: tuple[FieldViolation, ...] = ()
    precondition_types: tuple[str, ...] = ()
    resource: tuple[str, str] | None = None
    retry_delay: float | None = None  # RetryInfo's, in seconds


def details_of(error: grpc.RpcError) -> ErrorDetails:
    """Decode ``grpc-status-details-bin`` of a failed call (``grpc.RpcError`` from a stub)."""
    call = error if isinstance(error, grpc.Call) else None
    code = call.code() if call is not None else grpc.StatusCode.UNKNOWN
    message = call.details() if call is not None else str(error)
    status = rpc_status.from_call(call) if call is not None else None
    result = ErrorDetails(code=code, message=message or "")
    if status is None:
        return result
    reason, metadata = "", {}
    violations: list[FieldViolation] = []
    preconditions: list[str] = []
    resource = None
    retry_delay = None
    for packed in status.details:
        if packed.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            packed.Unpack(info)
            reason, metadata = info.reason, dict(info.metadata)
        elif packed.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            packed.Unpack(bad)
            violations.extend(FieldViolation(v.field, v.description) for v in bad.field_violations)
        elif packed.Is(error_details_pb2.PreconditionFailure.DESCRIPTOR):
            failure = error_details_pb2.PreconditionFailure()
            packed.Unpack(failure)
            preconditions.extend(v.type for v in failure.violations)
        elif packed.Is(error_details_pb2.ResourceInfo.DESCRIPTOR):
            info_r = error_details_pb2.ResourceInfo()
            packed.Unpack(info_r)
            resource = (info_r.resource_type, info_r.resource_name)
        elif packed.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            packed.Unpack(retry)
            retry_delay = retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9
    return ErrorDetails(
        code=code,
        message=status.message,
        reason=reason,
        metadata=metadata,
        field_violations=tuple(violations),
        precondition_types=tuple(preconditions),
        resource=resource,
        retry_delay=retry_delay,
    )
