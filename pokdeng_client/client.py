"""A small Python client for the pokdeng gRPC API.

    from pokdeng_client import PokdengClient

    with PokdengClient("127.0.0.1:50051", token="...") as pokdeng:
        pokdeng.call("WalletService", "OpenWallet", wallet_id="alice")
        round_ = pokdeng.call("RoundService", "StartRound", table_id="t1", client_seed="lucky").round

Every command gets a fresh request id unless you give one, and is retried with the
same id on UNAVAILABLE or ABORTED: the server's idempotency makes that safe.
"""

from __future__ import annotations

import time
import uuid
from types import TracebackType
from typing import Any

import grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_client.v1 import pokdeng_pb2_grpc as pb_grpc

SERVICES = ("WalletService", "TableService", "RoundService", "AuditService", "EventService")
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED)


class PokdengClient:
    def __init__(
        self,
        target: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        """``credentials``: TLS (``grpc.ssl_channel_credentials(...)``, docs/operations.md); None: plaintext."""
        self.channel = (
            grpc.secure_channel(target, credentials) if credentials is not None else grpc.insecure_channel(target)
        )
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.stubs: dict[str, Any] = {name: getattr(pb_grpc, f"{name}Stub")(self.channel) for name in SERVICES}

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    def request(self, service: str, method: str, **fields: Any) -> Any:
        """The request message of ``service.method`` filled with ``fields``."""
        descriptor = pb.DESCRIPTOR.services_by_name[service].methods_by_name[method]
        message_class = getattr(pb, descriptor.input_type.name)
        message = message_class(**fields)
        if "request_id" in descriptor.input_type.fields_by_name and not message.request_id:
            message.request_id = uuid.uuid4().hex
        return message

    def call(self, service: str, method: str, **fields: Any) -> Any:
        """Send one call; commands are retried with the same request id when that is safe."""
        message = self.request(service, method, **fields)
        stub = getattr(self.stubs[service], method)
        for attempt in range(self.retries + 1):
            try:
                return stub(message, metadata=self.metadata, timeout=self.timeout)
            except grpc.RpcError as error:
                code = error.code() if isinstance(error, grpc.Call) else None
                if code not in RETRYABLE or attempt == self.retries or not getattr(message, "request_id", ""):
                    raise
                time.sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> PokdengClient:
        return self

    def __exit__(self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        self.close()
