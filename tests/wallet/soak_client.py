"""The soak's gRPC client (``soak.Soak``): calls with fixed request ids, retried while pokdeng restarts; tables."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_status import rpc_status

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_client.v1 import pokdeng_pb2_grpc as pb_grpc
from pokdeng_testkit.harness.server import FAST_RECONNECT

TABLES = "TableService"
ROUNDS = "RoundService"
WALLETS = "WalletService"
RETRIED = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED}


class Refused(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


def reason_of(error: grpc.Call) -> str:
    from google.rpc import error_details_pb2  # type: ignore[import-untyped]

    with contextlib.suppress(Exception):
        status = rpc_status.from_call(error)
        for detail in status.details if status is not None else ():
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                return str(info.reason)
    return error.code().name


class Client:
    """Calls with fixed request ids, retried on UNAVAILABLE, DEADLINE_EXCEEDED and ABORTED until ``patience`` (each
    retry told to ``retried``)."""

    def __init__(self, target: str, token: str, retried: Callable[[], None]) -> None:
        self.channel = grpc.insecure_channel(target, options=FAST_RECONNECT)
        self.stubs = {name: getattr(pb_grpc, f"{name}Stub")(self.channel) for name in (TABLES, ROUNDS, WALLETS)}
        self.metadata = (("authorization", f"Bearer {token}"),)
        self.retried = retried

    def call(self, service: str, method: str, patience: float = 60.0, **fields: Any) -> Any:
        descriptor = pb.DESCRIPTOR.services_by_name[service].methods_by_name[method]
        request = getattr(pb, descriptor.input_type.name)(**fields)
        deadline = time.monotonic() + patience
        while True:
            try:
                return getattr(self.stubs[service], method)(request, metadata=self.metadata, timeout=5.0)
            except grpc.RpcError as error:
                assert isinstance(error, grpc.Call)
                code = error.code()
                if code in RETRIED and time.monotonic() < deadline:
                    self.retried()
                    time.sleep(0.1 if code is grpc.StatusCode.ABORTED else 0.05)
                    continue
                if code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                    raise Refused(reason_of(error), error.details() or "") from None
                raise

    def close(self) -> None:
        self.channel.close()


@dataclass(frozen=True)
class Table:
    table_id: str
    profile: str
    players: tuple[str, ...]
    dealer: str | None = None


def tables(count: int) -> list[Table]:
    profiles = ("classic", "kingmaker")
    out = []
    for i in range(count):
        players = tuple(f"t{i}-p{j}" for j in range(3))
        out.append(Table(f"t{i}", profiles[i % 2], players, dealer=f"t{i}-dealer" if i % 4 == 0 else None))
    return out


__all__ = ["RETRIED", "ROUNDS", "TABLES", "WALLETS", "Client", "Refused", "Table", "reason_of", "tables"]
