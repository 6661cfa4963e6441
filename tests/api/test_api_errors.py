"""The error map as a table: each error class gives its code, reason and google.rpc details."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2  # type: ignore[import-untyped]

from pokdeng_core.errors import (
    DomainError,
    InsufficientFunds,
    InvalidCommand,
    NotYourTurn,
    SealedShoe,
    UnknownSeat,
    WrongPhase,
)
from pokdeng_service.api.errors import (
    DeadlineExpired,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
    status_for,
)
from pokdeng_service.application.errors import (
    AlreadyExists,
    Conflict,
    DuplicateRequest,
    FieldViolation,
    NotFound,
    PermissionDenied,
    RequestInvalid,
    WalletRefused,
    WalletSessionMissing,
    WalletSessionRejected,
    WalletUnavailable,
)

CASES = [
    (
        RequestInvalid([FieldViolation("a", "bad"), FieldViolation("b", "worse")]),
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
    ),
    (InvalidCommand("stake too big", field="stake"), "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    (DuplicateRequest("used", field="request_id"), "INVALID_ARGUMENT", "DUPLICATE_REQUEST"),
    (WrongPhase("not now", phase="closed"), "FAILED_PRECONDITION", "WRONG_PHASE"),
    (NotYourTurn("seat 2's turn", seat=1, turn=2), "FAILED_PRECONDITION", "NOT_YOUR_TURN"),
    (UnknownSeat("no seat 9", seat=9), "FAILED_PRECONDITION", "UNKNOWN_SEAT"),
    (SealedShoe("sealed"), "FAILED_PRECONDITION", "SEALED_SHOE"),
    (DomainError("already has a side bet"), "FAILED_PRECONDITION", "RULE_VIOLATION"),
    (WalletRefused("the platform refused", tx_id="r#1:debit:1"), "FAILED_PRECONDITION", "WALLET_REFUSED"),
    (WalletSessionMissing("no session", player="w"), "FAILED_PRECONDITION", "WALLET_SESSION_MISSING"),
    (
        WalletSessionRejected("Hub88 refused it", player="w", status="RS_ERROR_TOKEN_EXPIRED"),
        "FAILED_PRECONDITION",
        "WALLET_SESSION_REJECTED",
    ),
    (InsufficientFunds("short", required=5, available=3, wallet="w"), "FAILED_PRECONDITION", "INSUFFICIENT_FUNDS"),
    (NotFound("round 'x' not found", round="x"), "NOT_FOUND", "NOT_FOUND"),
    (AlreadyExists("wallet 'w' already exists", wallet="w"), "ALREADY_EXISTS", "ALREADY_EXISTS"),
    (Conflict("again"), "ABORTED", "CONFLICT"),
    (Unauthenticated("who?"), "UNAUTHENTICATED", "UNAUTHENTICATED"),
    (PermissionDenied("no"), "PERMISSION_DENIED", "PERMISSION_DENIED"),
    (Unavailable("bye"), "UNAVAILABLE", "SHUTTING_DOWN"),
    (WalletUnavailable("the platform did not answer", tx_id="r#1:debit:1"), "UNAVAILABLE", "WALLET_UNAVAILABLE"),
    (DeadlineExpired("late"), "DEADLINE_EXCEEDED", "DEADLINE_EXCEEDED"),
    (ResourceExhausted("full"), "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED"),
    (RuntimeError("boom"), "INTERNAL", "INTERNAL"),
]


def _unpack(status: Any, kind: Any) -> list[Any]:
    out = []
    for packed in status.details:
        if packed.Is(kind.DESCRIPTOR):
            message = kind()
            packed.Unpack(message)
            out.append(message)
    return out


@pytest.mark.parametrize("error, code, reason", CASES, ids=[type(c[0]).__name__ for c in CASES])
def test_the_map(error: Exception, code: str, reason: str) -> None:
    status = status_for(error)
    assert status.code == getattr(code_pb2, code) and status.code != code_pb2.UNKNOWN
    assert grpc.StatusCode[code]  # a real gRPC code
    (info,) = _unpack(status, error_details_pb2.ErrorInfo)
    assert (info.reason, info.domain) == (reason, "pokdeng")
    assert "Traceback" not in status.message
    if code == "INVALID_ARGUMENT":
        (bad,) = _unpack(status, error_details_pb2.BadRequest)
        assert bad.field_violations and all(v.field for v in bad.field_violations)
    if code == "FAILED_PRECONDITION":
        (failure,) = _unpack(status, error_details_pb2.PreconditionFailure)
        assert failure.violations[0].type == reason
    if isinstance(error, InsufficientFunds):
        assert dict(info.metadata) == {"required": "5", "available": "3", "wallet": "w"}
    if isinstance(error, WalletUnavailable):  # transient: retry the same request id, after the delay given
        assert dict(info.metadata) == {"tx_id": "r#1:debit:1"}
        (retry,) = _unpack(status, error_details_pb2.RetryInfo)
        assert retry.retry_delay.nanos > 0
    if code == "INTERNAL":
        assert "boom" not in status.message and status.message.startswith("internal error (reference ")
