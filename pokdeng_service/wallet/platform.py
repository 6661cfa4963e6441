"""The client of a platform's wallet (``pokdeng.wallet.v1.PlatformWalletService``), over gRPC or JSON over HTTP.

``PlatformWallet.debit/credit/rollback`` send one transaction, retried with the same tx_id until
a *definite* answer (a response naming that tx_id with a status), at most ``attempts`` times with
a short backoff; ``Unanswered`` if none came (the outcome is unknown: the caller records it and
the recovery goes on). Every gRPC error, an HTTP answer that is not a JSON response, and a
response for another tx_id (a reply that belongs to another call) are unknown outcomes.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from pokdeng_service.store.secret_files import read_secret
from pokdeng_service.wallet.sessions import PlayerSession, SessionRefused
from pokdeng_service.wallet.signing import ANSWER, HEADER, Signer, Verifier
from pokdeng_service.wallet.v1 import wallet_pb2 as pb
from pokdeng_service.wallet.v2 import wallet_pb2 as pb2

SERVICE = "pokdeng.wallet.v1.PlatformWalletService"
M = TypeVar("M", bound=Message)

STATUS_NAMES = {
    pb.TRANSACTION_STATUS_APPLIED: "applied",
    pb.TRANSACTION_STATUS_INSUFFICIENT_FUNDS: "insufficient_funds",
    pb.TRANSACTION_STATUS_UNKNOWN_PLAYER: "unknown_player",
    pb.TRANSACTION_STATUS_ROLLED_BACK: "rolled_back",
    pb.TRANSACTION_STATUS_REFUSED: "refused",
}


class Unanswered(Exception):
    """No definite answer within the attempts: the transaction's outcome is unknown."""


class SessionRejected(Unanswered):
    """No definite answer, because the platform refused the player's wallet session (``status``: Hub88's
    ``RS_ERROR_INVALID_TOKEN``, ``RS_ERROR_TOKEN_EXPIRED``): a stake's debit is rolled back as any unanswered one,
    and its caller hears ``WalletSessionRejected``."""

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Answer:
    """A definite answer: ``status`` (applied, insufficient_funds, unknown_player, rolled_back, refused)."""

    status: str
    balance: int = 0
    platform_ref: str = ""
    reason: str = ""
    debited: bool = False

    @property
    def applied(self) -> bool:
        return self.status == "applied"


class Transport(Protocol):
    """One call of the service: ``method`` (Debit, Credit, ...) with ``request``, a response or an exception; ``token``
    the wallet session's (given only where the platform takes one: Hub88)."""

    def call(self, method: str, request: Message, response_type: type[M], timeout: float, token: str = "") -> M: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class Security:
    """How the calls are protected (docs/wallet.md, "Authenticated transport"): TLS (``ca``: the CA file that
    verifies the platform's certificate, the system's trust store if empty), mutual TLS (``cert`` and ``key``:
    pokdeng's client certificate and its private key, a secret file), every request signed (``signer``), the
    platform's answers verified (``answers``: None, not checked)."""

    ca: str = ""
    cert: str = ""
    key: str = ""
    signer: Signer | None = None
    answers: Verifier | None = None

    def client_key(self) -> bytes:
        return read_secret(self.key, "wallet TLS client key") if self.key else b""

    def check_answer(self, value: str | None, path: str, body: bytes, request_body: bytes) -> None:
        """``ValueError`` (an unknown outcome) unless the answer is signed by one of the platform's keys."""
        if self.answers is None:
            return
        problem = self.answers.problem(value, ANSWER, path, body, request_body)
        if problem:
            raise ValueError(f"the platform's answer is not signed by its key: {problem}")


PLAIN = Security()


def _path(method: str, request: Message) -> str:
    """``/pokdeng.wallet.v<N>.PlatformWalletService/<Method>``: the service of the request's protocol version."""
    return f"/{request.DESCRIPTOR.file.package}.PlatformWalletService/{method}"


class GrpcTransport:
    """gRPC to ``host:port``: plaintext (a private network or a sidecar), or TLS (``grpcs://``, mutual with a client
    certificate) with ``security``; every request signed in its metadata when a signer is given."""

    def __init__(self, target: str, security: Security = PLAIN, tls: bool = False) -> None:
        options = [
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1000),
        ]
        self.security = security
        if tls:
            ca = Path(security.ca).read_bytes() if security.ca else None
            cert = Path(security.cert).read_bytes() if security.cert else None
            credentials = grpc.ssl_channel_credentials(ca, security.client_key() or None, cert)
            self.channel = grpc.secure_channel(target, credentials, options=options)
        else:
            self.channel = grpc.insecure_channel(target, options=options)
        self._callables: dict[str, Any] = {}

    def _callable(self, path: str, request: Message, response_type: type[Message]) -> Any:
        found = self._callables.get(path)
        if found is None:
            found = self._callables[path] = self.channel.unary_unary(
                path, request_serializer=type(request).SerializeToString, response_deserializer=response_type.FromString
            )
        return found

    def call(self, method: str, request: Message, response_type: type[M], timeout: float, token: str = "") -> M:
        del token  # (pokdeng's protocol carries no session)
        security, path = self.security, _path(method, request)
        stub = self._callable(path, request, response_type)
        if security.signer is None and security.answers is None:
            response: M = stub(request, timeout=timeout)
            return response
        body = request.SerializeToString(deterministic=True)
        metadata = [(HEADER, security.signer.sign("POST", path, body))] if security.signer else []
        response, call = stub.with_call(request, timeout=timeout, metadata=metadata)
        answer = dict(call.initial_metadata() or ()).get(HEADER)
        security.check_answer(answer, path, response.SerializeToString(deterministic=True), body)
        return response

    def close(self) -> None:
        self.channel.close()


class HttpTransport:
    """JSON over HTTP(S): proto3 JSON POSTed to ``<base>/pokdeng.wallet.v1.PlatformWalletService/<Method>``; over
    https the platform's certificate verified by ``security.ca`` (else the system's trust store), and pokdeng's
    client certificate shown when given; every body signed (header ``x-pokdeng-signature``) when a signer is given."""

    def __init__(self, base_url: str, security: Security = PLAIN) -> None:
        self.base = base_url.rstrip("/")
        self.prefix = urlsplit(self.base).path
        self.security = security
        self.context: ssl.SSLContext | None = None
        if self.base.startswith("https://"):
            self.context = ssl.create_default_context(cafile=security.ca or None)
            if security.cert:
                security.client_key()  # (the secret-file rule, before the library reads it by its path)
                self.context.load_cert_chain(security.cert, security.key)

    def call(self, method: str, request: Message, response_type: type[M], timeout: float, token: str = "") -> M:
        del token  # (pokdeng's protocol carries no session)
        body = json_format.MessageToJson(request, indent=None).encode()
        path = f"{self.prefix}{_path(method, request)}"
        headers = {"Content-Type": "application/json"}
        if self.security.signer is not None:
            headers[HEADER] = self.security.signer.sign("POST", path, body)
        url = f"{self.base}{_path(method, request)}"
        http_request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(http_request, timeout=timeout, context=self.context) as reply:
            if reply.status != 200:
                raise OSError(f"HTTP {reply.status}")
            raw = reply.read()
            self.security.check_answer(reply.headers.get(HEADER), path, raw, body)
            data = json.loads(raw)
        return json_format.ParseDict(data, response_type(), ignore_unknown_fields=True)

    def close(self) -> None:
        pass


SCHEMES = ("grpc", "grpcs", "http", "https")
"""The URL schemes the adapter speaks: gRPC (also a bare ``host:port``), gRPC over TLS, JSON over HTTP(S)."""


def url_problem(url: str) -> str:
    """What is wrong with the platform's wallet URL ("" if nothing): a scheme the adapter does not speak, no host, no
    port of gRPC."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "grpc", url
    if scheme not in SCHEMES:
        return (
            f"the platform's wallet URL {url!r} has the scheme {scheme!r}, which pokdeng does not speak: give "
            "host:port or grpc://host:port (gRPC), grpcs://host:port (gRPC over TLS), or http(s)://host:port[/base] "
            "(JSON over HTTP)"
        )
    try:
        parts = urlsplit(f"{scheme}://{rest}")
        port = parts.port
    except ValueError as error:
        return f"the platform's wallet URL {url!r} is not a URL: {error}"
    if not parts.hostname:
        return f"the platform's wallet URL {url!r} names no host"
    if scheme in ("grpc", "grpcs") and (port is None or parts.path not in ("", "/")):
        return f"the platform's wallet URL {url!r} is not host:port (gRPC: host:port, grpc:// or grpcs://host:port)"
    return ""


def transport_for(url: str, security: Security = PLAIN) -> Transport:
    """``http://...``/``https://...``: JSON over HTTP(S); ``grpc://host:port`` or ``host:port``: gRPC;
    ``grpcs://host:port``: gRPC over TLS (``ValueError``: any other URL, ``url_problem``)."""
    problem = url_problem(url)
    if problem:
        raise ValueError(problem)
    if url.startswith(("http://", "https://")):
        return HttpTransport(url, security)
    if url.startswith("grpcs://"):
        return GrpcTransport(url.removeprefix("grpcs://"), security, tls=True)
    return GrpcTransport(url.removeprefix("grpc://"), security)


class PlatformWallet:
    """The platform's wallet: every call retried with its transaction id until a definite answer."""

    def __init__(
        self, transport: Transport, timeout: float = 2.0, attempts: int = 3, backoff: float = 0.05,
        protocol: int = 1, game_code: str = "pokdeng", provider_id: str = "pokdeng",
    ) -> None:  # fmt: skip
        self.transport = transport
        self.protocol = protocol  # 1: pokdeng.wallet.v1; 2: pokdeng.wallet.v2 (docs/wallet.md)
        self.game_code = game_code
        self.provider_id = provider_id
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        self.calls = 0  # calls made (answered or not)
        self.unanswered = 0  # calls without a definite answer
        self._lock = threading.Lock()

    @classmethod
    def connect(
        cls, url: str, timeout: float = 2.0, attempts: int = 3, security: Security = PLAIN, protocol: int = 1,
        game_code: str = "pokdeng", provider_id: str = "pokdeng",
    ) -> PlatformWallet:  # fmt: skip
        transport = transport_for(url, security)
        return cls(transport, timeout, attempts, protocol=protocol, game_code=game_code, provider_id=provider_id)

    def close(self) -> None:
        self.transport.close()

    # -- the calls -----------------------------------------------------------------------------

    def debit(
        self, tx_id: str, player: str, round_id: str, table_id: str, amount: int, currency: str, purpose: str,
        session: PlayerSession | None = None,
    ) -> Answer:  # fmt: skip
        """``session``: the player's wallet session the call is sent with (Hub88's token; its game code)."""
        if self.protocol == 2:
            request2 = pb2.DebitRequest(
                tx_id=tx_id, player=player, round_id=round_id, table_id=table_id, amount=amount, currency=currency,
                purpose=purpose, game_code=self._game(session), provider_id=self.provider_id,
            )  # fmt: skip
            return _answer_v2("Debit", self._definite_v2("Debit", request2, currency, session=session))
        request = pb.DebitRequest(
            tx_id=tx_id, player=player, round_id=round_id, table_id=table_id, amount=amount,
            currency=currency, purpose=purpose,
        )  # fmt: skip
        reply = self._definite("Debit", request, pb.DebitResponse, tx_id)
        return Answer(STATUS_NAMES[reply.status], reply.balance, reply.platform_ref, reply.reason)

    def credit(
        self, tx_id: str, player: str, round_id: str, table_id: str, amount: int, currency: str, debits: list[str],
        round_closed: bool = False, session: PlayerSession | None = None,
    ) -> Answer:  # fmt: skip
        if self.protocol == 2:
            request2 = pb2.CreditRequest(
                tx_id=tx_id, player=player, round_id=round_id, table_id=table_id, amount=amount, currency=currency,
                debit_tx_ids=debits, game_code=self._game(session), provider_id=self.provider_id,
                round_closed=round_closed,
            )  # fmt: skip
            return _answer_v2("Credit", self._definite_v2("Credit", request2, currency, session=session))
        request = pb.CreditRequest(
            tx_id=tx_id, player=player, round_id=round_id, table_id=table_id, amount=amount,
            currency=currency, debit_tx_ids=debits,
        )  # fmt: skip
        reply = self._definite("Credit", request, pb.CreditResponse, tx_id)
        return Answer(STATUS_NAMES[reply.status], reply.balance, reply.platform_ref, reply.reason)

    def rollback(
        self, tx_id: str, player: str, round_id: str, reason: str, amount: int = 0, currency: str = "",
        table_id: str = "", round_closed: bool = False, session: PlayerSession | None = None,
    ) -> Answer:  # fmt: skip
        """Undo the debit ``tx_id`` (version 2: as its own transaction ``<tx_id>:rollback``, with the debit's amount
        and currency; ``session``: the debit's)."""
        if self.protocol == 2:
            request2 = pb2.RollbackRequest(
                tx_id=rollback_tx_id(tx_id), original_tx_id=tx_id, player=player, round_id=round_id,
                table_id=table_id, amount=amount, currency=currency, reason=reason, game_code=self._game(session),
                provider_id=self.provider_id, round_closed=round_closed,
            )  # fmt: skip
            return _answer_v2("Rollback", self._definite_v2("Rollback", request2, currency, session=session))
        request = pb.RollbackRequest(tx_id=tx_id, player=player, round_id=round_id, reason=reason)
        reply = self._definite("Rollback", request, pb.RollbackResponse, tx_id)
        return Answer(STATUS_NAMES[reply.status], reply.balance, "", reply.reason, reply.debited)

    def balance(self, player: str, currency: str, session: PlayerSession | None = None) -> int | None:
        """The player's balance, None if the platform has no such player (``Unanswered``: no answer;
        ``SessionRejected``: the platform refused the player's ``session``)."""
        if self.protocol == 2:
            request2 = pb2.BalanceRequest(
                player=player, currency=currency, game_code=self._game(session), provider_id=self.provider_id
            )
            reply2 = self._definite_v2("Balance", request2, currency, key="player", ident=player, session=session)
            return int(reply2.balance) if reply2.status == pb2.STATUS_APPLIED else None
        request = pb.BalanceRequest(player=player, currency=currency)
        reply = self._definite("Balance", request, pb.BalanceResponse, player, key="player")
        return int(reply.balance) if reply.status == pb.TRANSACTION_STATUS_APPLIED else None

    def transactions(self, since_ms: int, until_ms: int = 0, page_size: int = 1000) -> Iterator[pb.Transaction]:
        """The platform's record of a period, page by page (``Unanswered`` if a page has no answer)."""
        token = ""
        while True:
            if self.protocol == 2:
                request2 = pb2.ListTransactionsRequest(
                    since_unix_ms=since_ms, until_unix_ms=until_ms, page_token=token, page_size=page_size
                )
                reply2 = self._call_retried("ListTransactions", request2, pb2.ListTransactionsResponse, _own_request)
                yield from (_row_v1(row) for row in reply2.transactions)
                token = reply2.next_page_token
            else:
                request = pb.ListTransactionsRequest(
                    since_unix_ms=since_ms, until_unix_ms=until_ms, page_token=token, page_size=page_size
                )
                reply = self._call_retried("ListTransactions", request, pb.ListTransactionsResponse)
                yield from reply.transactions
                token = reply.next_page_token
            if not token:
                return

    # -- retries -------------------------------------------------------------------------------

    def _definite(self, method: str, request: Message, kind: type[M], ident: str, key: str = "tx_id") -> M:
        def definite(reply: Any) -> bool:
            return bool(getattr(reply, key) == ident and reply.status in STATUS_NAMES)

        return self._call_retried(method, request, kind, definite)

    def _game(self, session: PlayerSession | None) -> str:
        """The game code a call names: its session's, else the deployment's."""
        return session.game_code if session is not None and session.game_code else self.game_code

    def _definite_v2(
        self, method: str, request: Message, currency: str, key: str = "tx_id", ident: str = "",
        session: PlayerSession | None = None,
    ) -> Any:  # fmt: skip
        """A version 2 answer: to this attempt's request id and this transaction (or player), with a status, in the
        request's currency."""
        want = ident or str(getattr(request, key))
        response = getattr(pb2, f"{method}Response")

        def definite(reply: Any, sent: Message) -> bool:
            return bool(
                reply.request_id == getattr(sent, "request_id", None) and getattr(reply, key) == want
                and reply.status != pb2.STATUS_UNSPECIFIED
                and (reply.currency == currency or reply.status == pb2.STATUS_UNKNOWN_PLAYER)
            )  # fmt: skip

        return self._call_retried(method, request, response, definite, token=session.token if session else "")

    def _call_retried(self, method: str, request: Message, kind: type[M], definite: Any = None, token: str = "") -> M:
        last = "no call made"
        versioned = "request_id" in request.DESCRIPTOR.fields_by_name  # (version 2: a request id per attempt)
        for attempt in range(self.attempts):
            if attempt:
                time.sleep(min(self.backoff * 2 ** (attempt - 1), 1.0))
            with self._lock:
                self.calls += 1
            sent = request
            if versioned:
                sent = type(request)()
                sent.CopyFrom(request)
                sent.request_id = uuid.uuid4().hex  # type: ignore[attr-defined]
            try:
                if token:
                    reply = self.transport.call(method, sent, kind, self.timeout, token=token)
                else:
                    reply = self.transport.call(method, sent, kind, self.timeout)
            except SessionRefused as refused:  # (retrying with the same session cannot help)
                with self._lock:
                    self.unanswered += 1
                raise SessionRejected(f"{method}: {refused}", refused.status) from None
            except (grpc.RpcError, OSError, ValueError, json_format.ParseError) as error:
                last = _describe(error)
            else:
                if definite is None or (definite(reply, sent) if versioned else definite(reply)):
                    return reply
                last = "an answer that is not this call's"
            with self._lock:
                self.unanswered += 1
        raise Unanswered(f"{method}: no definite answer after {self.attempts} calls ({last})")


def rollback_tx_id(debit_tx_id: str) -> str:
    """Version 2: a rollback's own tx id, ``<debit tx id>:rollback``."""
    return f"{debit_tx_id}:rollback"


def _own_request(reply: Any, sent: Any) -> bool:
    return bool(reply.request_id == sent.request_id)


_V2_NAMES = {
    pb2.STATUS_APPLIED: "applied",
    pb2.STATUS_INSUFFICIENT_FUNDS: "insufficient_funds",
    pb2.STATUS_UNKNOWN_PLAYER: "unknown_player",
    pb2.STATUS_ROLLED_BACK: "rolled_back",
}


def _answer_v2(method: str, reply: Any) -> Answer:
    """A version 2 answer as the adapter knows answers: DUPLICATE as what the first call was answered (nothing applied
    now, the money moved once), a rollback's APPLIED or BET_NOT_FOUND as done (debited or not: a tombstone), a
    credit's BET_NOT_FOUND, WRONG_CURRENCY, ROUND_CLOSED as refusals (the player is owed it: docs/wallet.md)."""
    status = reply.original if reply.status == pb2.STATUS_DUPLICATE else reply.status
    name = pb2.Status.Name(reply.status).removeprefix("STATUS_").lower()
    if method == "Rollback" and status in (pb2.STATUS_APPLIED, pb2.STATUS_ROLLED_BACK, pb2.STATUS_BET_NOT_FOUND):
        debited = bool(reply.debited) and status != pb2.STATUS_BET_NOT_FOUND
        return Answer("rolled_back", reply.balance, reply.platform_ref, reply.reason or name, debited)
    if status in _V2_NAMES and not (method == "Rollback" and status == pb2.STATUS_INSUFFICIENT_FUNDS):
        return Answer(_V2_NAMES[status], reply.balance, reply.platform_ref, reply.reason)
    return Answer("refused", reply.balance, reply.platform_ref, f"{name}: {reply.reason}" if reply.reason else name)


_V1_KIND: dict[int, Any] = {
    pb2.TRANSACTION_KIND_DEBIT: pb.TRANSACTION_KIND_DEBIT,
    pb2.TRANSACTION_KIND_CREDIT: pb.TRANSACTION_KIND_CREDIT,
    pb2.TRANSACTION_KIND_ROLLBACK: pb.TRANSACTION_KIND_ROLLBACK,
}
_V1_STATUS: dict[int, Any] = {
    pb2.STATUS_APPLIED: pb.TRANSACTION_STATUS_APPLIED,
    pb2.STATUS_ROLLED_BACK: pb.TRANSACTION_STATUS_ROLLED_BACK,
    pb2.STATUS_BET_NOT_FOUND: pb.TRANSACTION_STATUS_ROLLED_BACK,
    pb2.STATUS_INSUFFICIENT_FUNDS: pb.TRANSACTION_STATUS_INSUFFICIENT_FUNDS,
    pb2.STATUS_UNKNOWN_PLAYER: pb.TRANSACTION_STATUS_UNKNOWN_PLAYER,
}


def _row_v1(row: Any) -> pb.Transaction:
    """A version 2 row as the reconciliation reads rows: a rollback under the tx id of the debit it undoes."""
    rollback = row.kind == pb2.TRANSACTION_KIND_ROLLBACK
    return pb.Transaction(
        tx_id=row.original_tx_id if rollback and row.original_tx_id else row.tx_id,
        kind=_V1_KIND.get(row.kind, pb.TRANSACTION_KIND_UNSPECIFIED),
        player=row.player, round_id=row.round_id, amount=row.amount, currency=row.currency,
        status=_V1_STATUS.get(row.status, pb.TRANSACTION_STATUS_REFUSED),
        debit_tx_ids=[row.original_tx_id] if rollback else list(row.debit_tx_ids),
        recorded_unix_ms=row.recorded_unix_ms,
    )  # fmt: skip


def _describe(error: BaseException) -> str:
    if isinstance(error, grpc.Call):
        return f"{error.code().name}: {error.details()}"
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code}"
    return f"{type(error).__name__}: {error}"


__all__ = [
    "PLAIN",
    "Answer",
    "GrpcTransport",
    "HttpTransport",
    "PlatformWallet",
    "Security",
    "SessionRejected",
    "Transport",
    "Unanswered",
    "transport_for",
]
