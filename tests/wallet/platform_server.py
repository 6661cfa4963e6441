"""A reference platform wallet: a real ``PlatformWalletService`` (gRPC, and JSON over HTTP) on its own SQLite ledger.

It keeps each player's balance and every transaction pokdeng sends, idempotent by tx id as
proto/pokdeng/wallet/v1/wallet.proto says: a repeated call answers what the first did; a tx id
reused with another body is refused; a rollback of a debit it never saw leaves a tombstone, so a
debit arriving late (reordered or duplicated) never moves money; a credit settles only applied,
not rolled back debits of its player, once each.

``Ledger`` is the logic (thread safe: one connection, one lock, a transaction per call);
``serve_grpc(ledger, interceptors=...)`` and ``serve_http(ledger)`` put it on 127.0.0.1.

Both take ``tls`` (``ServerTls``: the platform's certificate and key, and the CA of the client
certificates it requires: mutual TLS) and ``guard`` (``Guard``: the platform's side of the signatures:
every request must be signed by an accepted key of pokdeng's, within the replay window, never a
signature seen before, else UNAUTHENTICATED / HTTP 401 and nothing is applied; and, with its own key,
the platform signs its answers), as a platform in production would.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from pokdeng_service.wallet.signing import ANSWER, HEADER, PrivateKey, Verifier, header
from pokdeng_service.wallet.v1 import wallet_pb2 as pb
from pokdeng_service.wallet.v1 import wallet_pb2_grpc as pb_grpc
from pokdeng_service.wallet.v2 import wallet_pb2 as pb2
from pokdeng_service.wallet.v2 import wallet_pb2_grpc as pb2_grpc

SCHEMA = """
CREATE TABLE IF NOT EXISTS players (player TEXT PRIMARY KEY, currency TEXT NOT NULL, balance INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS txs (
    tx_id TEXT NOT NULL, kind INTEGER NOT NULL, player TEXT NOT NULL, round_id TEXT NOT NULL,
    amount INTEGER NOT NULL, currency TEXT NOT NULL, status INTEGER NOT NULL, refs TEXT NOT NULL,
    body TEXT NOT NULL, reply BLOB NOT NULL, recorded_ms INTEGER NOT NULL, seq INTEGER PRIMARY KEY AUTOINCREMENT,
    UNIQUE (tx_id, kind)
);
CREATE TABLE IF NOT EXISTS settled (debit_tx_id TEXT PRIMARY KEY, credit_tx_id TEXT NOT NULL);
"""
DEBIT, CREDIT, ROLLBACK = pb.TRANSACTION_KIND_DEBIT, pb.TRANSACTION_KIND_CREDIT, pb.TRANSACTION_KIND_ROLLBACK
APPLIED, ROLLED_BACK, REFUSED = (
    pb.TRANSACTION_STATUS_APPLIED,
    pb.TRANSACTION_STATUS_ROLLED_BACK,
    pb.TRANSACTION_STATUS_REFUSED,
)


def _body(request: Message, *names: str) -> str:
    return hashlib.sha256(json.dumps([getattr(request, n) for n in names], default=list).encode()).hexdigest()


class Ledger:
    """The platform's books: balances and transactions in one SQLite file."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        # (the platform's process is never killed in these tests: a commit need not wait for the disk)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}

    def close(self) -> None:
        with self.lock:
            self.db.close()

    # -- set up (the platform's own business, not the protocol) -------------------------------

    def open_player(self, player: str, balance: int, currency: str = "THB") -> None:
        with self.lock:
            self.db.execute("INSERT INTO players VALUES (?, ?, ?)", (player, currency, balance))

    def balance_of(self, player: str) -> int:
        with self.lock:
            row = self.db.execute("SELECT balance FROM players WHERE player = ?", (player,)).fetchone()
        return int(row[0]) if row else 0

    def balances(self) -> dict[str, int]:
        with self.lock:
            return {p: int(b) for p, b in self.db.execute("SELECT player, balance FROM players")}

    def rows(self) -> list[dict[str, Any]]:
        """Every transaction row (for the tests' own checks)."""
        with self.lock:
            cursor = self.db.execute(
                "SELECT tx_id, kind, player, round_id, amount, status, refs, recorded_ms FROM txs ORDER BY seq"
            )
            names = [c[0] for c in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor]

    # -- the protocol ----------------------------------------------------------------------------

    def _begin(self, method: str) -> None:
        self.calls[method] = self.calls.get(method, 0) + 1
        self.db.execute("BEGIN IMMEDIATE")

    def _known(self, tx_id: str, kind: int, body: str, reply_type: type[Any]) -> Any:
        row = self.db.execute("SELECT body, reply FROM txs WHERE tx_id = ? AND kind = ?", (tx_id, kind)).fetchone()
        if row is None:
            return None
        if row[0] != body:
            return reply_type(tx_id=tx_id, status=REFUSED, reason="this tx_id was used with another body")
        return reply_type.FromString(row[1])

    def _player(self, player: str, currency: str) -> tuple[int, str] | None:
        row = self.db.execute("SELECT balance, currency FROM players WHERE player = ?", (player,)).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def _record(self, tx_id: str, kind: int, request: Any, amount: int, status: int, refs: Sequence[str], body: str,
                reply: Message) -> None:  # fmt: skip
        self.db.execute(
            "INSERT INTO txs (tx_id, kind, player, round_id, amount, currency, status, refs, body, reply, recorded_ms)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (tx_id, kind, request.player, request.round_id, amount, getattr(request, "currency", ""), status,
             json.dumps(list(refs)), body, reply.SerializeToString(), int(time.time() * 1000)),
        )  # fmt: skip

    def _move(self, player: str, delta: int) -> int:
        self.db.execute("UPDATE players SET balance = balance + ? WHERE player = ?", (delta, player))
        found = self._player(player, "")
        assert found is not None
        return found[0]

    def debit(self, request: pb.DebitRequest) -> pb.DebitResponse:
        body = _body(request, "player", "round_id", "amount", "currency")
        with self.lock:
            self._begin("Debit")
            try:
                known = self._known(request.tx_id, DEBIT, body, pb.DebitResponse)
                if self._known(request.tx_id, ROLLBACK, "", pb.RollbackResponse) is not None:
                    known = pb.DebitResponse(tx_id=request.tx_id, status=ROLLED_BACK, reason="rolled back before")
                if known is not None:
                    self.db.execute("COMMIT")
                    return known  # type: ignore[no-any-return]
                player = self._player(request.player, request.currency)
                if player is None:
                    reply = pb.DebitResponse(tx_id=request.tx_id, status=pb.TRANSACTION_STATUS_UNKNOWN_PLAYER)
                elif request.amount <= 0 or player[1] != request.currency:
                    reply = pb.DebitResponse(tx_id=request.tx_id, status=REFUSED, reason="amount or currency")
                elif player[0] < request.amount:
                    reply = pb.DebitResponse(
                        tx_id=request.tx_id, status=pb.TRANSACTION_STATUS_INSUFFICIENT_FUNDS, balance=player[0]
                    )
                else:
                    balance = self._move(request.player, -request.amount)
                    reply = pb.DebitResponse(
                        tx_id=request.tx_id, status=APPLIED, balance=balance, platform_ref=f"d-{request.tx_id}"
                    )
                self._record(request.tx_id, DEBIT, request, request.amount, reply.status, (), body, reply)
                self.db.execute("COMMIT")
                return reply
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def rollback(self, request: pb.RollbackRequest) -> pb.RollbackResponse:
        with self.lock:
            self._begin("Rollback")
            try:
                known = self._known(request.tx_id, ROLLBACK, "", pb.RollbackResponse)
                if known is not None:
                    self.db.execute("COMMIT")
                    return known  # type: ignore[no-any-return]
                debit = self.db.execute(
                    "SELECT status, amount, player FROM txs WHERE tx_id = ? AND kind = ?", (request.tx_id, DEBIT)
                ).fetchone()
                settled = self.db.execute("SELECT 1 FROM settled WHERE debit_tx_id = ?", (request.tx_id,)).fetchone()
                if settled is not None:
                    reply = pb.RollbackResponse(tx_id=request.tx_id, status=REFUSED, reason="settled by a credit")
                    self.db.execute("COMMIT")
                    return reply
                debited = debit is not None and debit[0] == APPLIED
                amount = int(debit[1]) if debited else 0
                balance = self._move(debit[2], amount) if debited else self._balance_or_zero(request.player)
                reply = pb.RollbackResponse(tx_id=request.tx_id, status=ROLLED_BACK, debited=debited, balance=balance)
                self._record(request.tx_id, ROLLBACK, request, amount, ROLLED_BACK, (request.tx_id,), "", reply)
                self.db.execute("COMMIT")
                return reply
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def _balance_or_zero(self, player: str) -> int:
        found = self._player(player, "")
        return found[0] if found else 0

    def credit(self, request: pb.CreditRequest) -> pb.CreditResponse:
        body = _body(request, "player", "round_id", "amount", "currency", "debit_tx_ids")
        with self.lock:
            self._begin("Credit")
            try:
                known = self._known(request.tx_id, CREDIT, body, pb.CreditResponse)
                if known is not None:
                    self.db.execute("COMMIT")
                    return known  # type: ignore[no-any-return]
                problem = self._credit_problem(request)
                if problem is not None:
                    reply = pb.CreditResponse(tx_id=request.tx_id, status=REFUSED, reason=problem)
                    self.db.execute("COMMIT")  # (a refusal for a cause that may pass is not remembered)
                    return reply
                balance = self._move(request.player, request.amount)
                for debit in request.debit_tx_ids:
                    self.db.execute("INSERT INTO settled VALUES (?, ?)", (debit, request.tx_id))
                reply = pb.CreditResponse(
                    tx_id=request.tx_id, status=APPLIED, balance=balance, platform_ref=f"c-{request.tx_id}"
                )
                self._record(request.tx_id, CREDIT, request, request.amount, APPLIED, request.debit_tx_ids, body, reply)
                self.db.execute("COMMIT")
                return reply
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def _credit_problem(self, request: pb.CreditRequest) -> str | None:
        if self._player(request.player, request.currency) is None:
            return "unknown player"
        if request.amount < 0:
            return "a negative credit"
        for debit in request.debit_tx_ids:
            row = self.db.execute(
                "SELECT status, player FROM txs WHERE tx_id = ? AND kind = ?", (debit, DEBIT)
            ).fetchone()
            undone = self.db.execute("SELECT 1 FROM txs WHERE tx_id = ? AND kind = ?", (debit, ROLLBACK)).fetchone()
            settled = self.db.execute("SELECT 1 FROM settled WHERE debit_tx_id = ?", (debit,)).fetchone()
            if row is None or row[0] != APPLIED or row[1] != request.player or undone or settled:
                return f"debit {debit} is not an open applied debit of {request.player}"
        return None

    def balance(self, request: pb.BalanceRequest) -> pb.BalanceResponse:
        with self.lock:
            self.calls["Balance"] = self.calls.get("Balance", 0) + 1
            found = self._player(request.player, request.currency)
        if found is None:
            return pb.BalanceResponse(player=request.player, status=pb.TRANSACTION_STATUS_UNKNOWN_PLAYER)
        return pb.BalanceResponse(player=request.player, status=APPLIED, balance=found[0])

    def list_transactions(self, request: pb.ListTransactionsRequest) -> pb.ListTransactionsResponse:
        after = int(request.page_token or 0)
        size = request.page_size or 500
        until = request.until_unix_ms or 2**62
        with self.lock:
            rows = self.db.execute(
                "SELECT seq, tx_id, kind, player, round_id, amount, currency, status, refs, recorded_ms FROM txs"
                " WHERE seq > ? AND recorded_ms >= ? AND recorded_ms < ? ORDER BY seq LIMIT ?",
                (after, request.since_unix_ms, until, size),
            ).fetchall()
        page = pb.ListTransactionsResponse(next_page_token=str(rows[-1][0]) if len(rows) == size else "")
        for seq, tx_id, kind, player, round_id, amount, currency, status, refs, recorded in rows:
            del seq
            page.transactions.add(
                tx_id=tx_id, kind=kind, player=player, round_id=round_id, amount=amount, currency=currency,
                status=status, debit_tx_ids=json.loads(refs), recorded_unix_ms=recorded,
            )  # fmt: skip
        return page


class Servicer(pb_grpc.PlatformWalletServiceServicer):
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def Debit(self, request: pb.DebitRequest, context: Any) -> pb.DebitResponse:
        return self.ledger.debit(request)

    def Credit(self, request: pb.CreditRequest, context: Any) -> pb.CreditResponse:
        return self.ledger.credit(request)

    def Rollback(self, request: pb.RollbackRequest, context: Any) -> pb.RollbackResponse:
        return self.ledger.rollback(request)

    def Balance(self, request: pb.BalanceRequest, context: Any) -> pb.BalanceResponse:
        return self.ledger.balance(request)

    def ListTransactions(self, request: pb.ListTransactionsRequest, context: Any) -> pb.ListTransactionsResponse:
        return self.ledger.list_transactions(request)


R = TypeVar("R", pb2.DebitResponse, pb2.CreditResponse, pb2.RollbackResponse)


class V2:
    """Protocol version 2 on the same ledger (docs/wallet.md, "Protocol version 2"): a request id per call, rollbacks
    as their own transactions (``<debit>:rollback``, the debit as ``original_tx_id``), DUPLICATE and BET_NOT_FOUND,
    the currency in every answer. It keeps every request (``requests``), the rounds closed by a ``round_closed``
    transaction, and the transactions that came for a round after it was closed (``late``: must stay empty)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.requests: list[tuple[str, Any]] = []
        self.closed: dict[str, str] = {}  # round id -> the tx id that closed it
        self.late: list[str] = []
        self.lock = threading.Lock()

    def _known(self, tx_id: str, kind: int) -> Any:
        with self.ledger.lock:
            return self.ledger.db.execute(
                "SELECT status, amount FROM txs WHERE tx_id = ? AND kind = ?", (tx_id, kind)
            ).fetchone()

    def _seen(self, method: str, request: Any, tx_id: str, known: Any) -> str:
        """ "" or why the request is refused outright (no request id, no game or provider)."""
        with self.lock:
            self.requests.append((method, request))
            if known is None and request.round_id in self.closed:
                self.late.append(tx_id)
            if request.round_closed:
                self.closed.setdefault(request.round_id, tx_id)
        if not request.request_id or not request.game_code or not request.provider_id:
            return "a version 2 call names its request id, game code and provider id"
        return ""

    def _currency(self, player: str, asked: str) -> str:
        found = self.ledger._player(player, "")
        return found[1] if found else asked

    def _answer(self, kind: type[R], request: Any, tx_id: str, status: Any, known: Any, v1: Any, **more: Any) -> R:
        reply = kind(
            request_id=request.request_id, tx_id=tx_id, balance=v1.balance, reason=v1.reason,
            currency=self._currency(request.player, request.currency), platform_ref=getattr(v1, "platform_ref", ""),
            **more,
        )  # fmt: skip
        if known is not None:
            reply.status, reply.original = pb2.STATUS_DUPLICATE, status
        else:
            reply.status = status
        return reply

    def debit(self, request: pb2.DebitRequest) -> pb2.DebitResponse:
        known = self._known(request.tx_id, DEBIT) or self._known(request.tx_id, ROLLBACK)
        problem = self._seen("Debit", request, request.tx_id, known)
        if problem:
            return pb2.DebitResponse(request_id=request.request_id, tx_id=request.tx_id,
                                           status=pb2.STATUS_REFUSED, reason=problem)  # fmt: skip
        v1 = self.ledger.debit(pb.DebitRequest(
            tx_id=request.tx_id, player=request.player, round_id=request.round_id, amount=request.amount,
            currency=request.currency, table_id=request.table_id, purpose=request.purpose,
        ))  # fmt: skip
        status = _V2_STATUS.get(v1.status, pb2.STATUS_REFUSED)
        return self._answer(pb2.DebitResponse, request, request.tx_id, status, known, v1)

    def credit(self, request: pb2.CreditRequest) -> pb2.CreditResponse:
        known = self._known(request.tx_id, CREDIT)
        problem = self._seen("Credit", request, request.tx_id, known)
        if problem:
            return pb2.CreditResponse(request_id=request.request_id, tx_id=request.tx_id,
                                           status=pb2.STATUS_REFUSED, reason=problem)  # fmt: skip
        v1 = self.ledger.credit(pb.CreditRequest(
            tx_id=request.tx_id, player=request.player, round_id=request.round_id, amount=request.amount,
            currency=request.currency, debit_tx_ids=request.debit_tx_ids, table_id=request.table_id,
        ))  # fmt: skip
        status = _V2_STATUS.get(v1.status, pb2.STATUS_REFUSED)
        if v1.status == REFUSED and "not an open applied debit" in v1.reason:
            status = pb2.STATUS_BET_NOT_FOUND
        return self._answer(pb2.CreditResponse, request, request.tx_id, status, known, v1)

    def rollback(self, request: pb2.RollbackRequest) -> pb2.RollbackResponse:
        known = self._known(request.original_tx_id, ROLLBACK)
        problem = self._seen("Rollback", request, request.tx_id, known)
        if request.tx_id != f"{request.original_tx_id}:rollback" or not request.currency:
            problem = problem or "a rollback is <original tx id>:rollback, with the debit's amount and currency"
        debit = self._known(request.original_tx_id, DEBIT)
        if debit is not None and debit[0] == APPLIED and int(debit[1]) != request.amount:
            problem = problem or f"the debit took {debit[1]}, not {request.amount}"
        if problem:
            return pb2.RollbackResponse(request_id=request.request_id, tx_id=request.tx_id,
                                           status=pb2.STATUS_REFUSED, reason=problem)  # fmt: skip
        v1 = self.ledger.rollback(pb.RollbackRequest(
            tx_id=request.original_tx_id, player=request.player, round_id=request.round_id, reason=request.reason
        ))  # fmt: skip
        if v1.status != ROLLED_BACK:
            status = pb2.STATUS_REFUSED
        else:
            status = pb2.STATUS_APPLIED if v1.debited else pb2.STATUS_BET_NOT_FOUND
        return self._answer(pb2.RollbackResponse, request, request.tx_id, status, known, v1, debited=v1.debited)

    def balance(self, request: pb2.BalanceRequest) -> pb2.BalanceResponse:
        v1 = self.ledger.balance(pb.BalanceRequest(player=request.player, currency=request.currency))
        return pb2.BalanceResponse(
            request_id=request.request_id, player=request.player, status=_V2_STATUS.get(v1.status, pb2.STATUS_REFUSED),
            balance=v1.balance, currency=self._currency(request.player, request.currency),
        )  # fmt: skip

    def list_transactions(self, request: pb2.ListTransactionsRequest) -> pb2.ListTransactionsResponse:
        v1 = self.ledger.list_transactions(pb.ListTransactionsRequest(
            since_unix_ms=request.since_unix_ms, until_unix_ms=request.until_unix_ms, page_token=request.page_token,
            page_size=request.page_size,
        ))  # fmt: skip
        page = pb2.ListTransactionsResponse(request_id=request.request_id, next_page_token=v1.next_page_token)
        closing = set(self.closed.values())
        for row in v1.transactions:
            rollback = row.kind == ROLLBACK
            status = _V2_STATUS.get(row.status, pb2.STATUS_REFUSED)
            if rollback:
                status = pb2.STATUS_APPLIED if row.amount else pb2.STATUS_BET_NOT_FOUND
            tx_id = f"{row.tx_id}:rollback" if rollback else row.tx_id
            page.transactions.add(
                tx_id=tx_id, kind=row.kind, player=row.player, round_id=row.round_id, amount=row.amount,
                currency=row.currency, status=status, debit_tx_ids=[] if rollback else row.debit_tx_ids,
                original_tx_id=row.tx_id if rollback else "", round_closed=tx_id in closing,
                recorded_unix_ms=row.recorded_unix_ms,
            )  # fmt: skip
        return page


_V2_STATUS = {
    APPLIED: pb2.STATUS_APPLIED,
    pb.TRANSACTION_STATUS_INSUFFICIENT_FUNDS: pb2.STATUS_INSUFFICIENT_FUNDS,
    pb.TRANSACTION_STATUS_UNKNOWN_PLAYER: pb2.STATUS_UNKNOWN_PLAYER,
    ROLLED_BACK: pb2.STATUS_ROLLED_BACK,
    REFUSED: pb2.STATUS_REFUSED,
}


class ServicerV2(pb2_grpc.PlatformWalletServiceServicer):
    def __init__(self, v2: V2) -> None:
        self.v2 = v2

    def Debit(self, request: pb2.DebitRequest, context: Any) -> pb2.DebitResponse:
        return self.v2.debit(request)

    def Credit(self, request: pb2.CreditRequest, context: Any) -> pb2.CreditResponse:
        return self.v2.credit(request)

    def Rollback(self, request: pb2.RollbackRequest, context: Any) -> pb2.RollbackResponse:
        return self.v2.rollback(request)

    def Balance(self, request: pb2.BalanceRequest, context: Any) -> pb2.BalanceResponse:
        return self.v2.balance(request)

    def ListTransactions(self, request: pb2.ListTransactionsRequest, context: Any) -> pb2.ListTransactionsResponse:
        return self.v2.list_transactions(request)


@dataclass
class ServerTls:
    cert: Path
    key: Path
    client_ca: Path | None = None  # mutual TLS: a client certificate signed by it is required


@dataclass
class Guard:
    """The platform's side of the signatures: pokdeng's accepted keys (``clients``: their window, and replays
    refused), the platform's own key signing its answers (``signer``: None, answers unsigned)."""

    clients: Verifier
    signer: PrivateKey | None = None
    refused: Counter[str] = field(default_factory=Counter)  # refusals by their first words
    key_ids: Counter[str] = field(default_factory=Counter)  # the accepted requests' key ids

    def check(self, value: str | None, path: str, body: bytes) -> str:
        problem = self.clients.problem(value, "POST", path, body)
        if problem:
            self.refused[" ".join(problem.split()[:2])] += 1
        else:
            from pokdeng_service.wallet.signing import parse

            self.key_ids[parse(value or "").key_id] += 1
        return problem

    def sign(self, path: str, body: bytes, request_body: bytes) -> str | None:
        return header(self.signer, ANSWER, path, body, request_body) if self.signer is not None else None


class GuardInterceptor(grpc.ServerInterceptor):
    """Every call's signature checked (metadata ``x-pokdeng-signature`` over the request's deterministic
    serialization) before anything below it runs; its answer signed."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        handler = continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner, path = handler.unary_unary, details.method

        def call(request: Any, context: Any) -> Any:
            body = request.SerializeToString(deterministic=True)
            problem = self.guard.check(dict(context.invocation_metadata()).get(HEADER), path, body)
            if problem:
                context.abort(grpc.StatusCode.UNAUTHENTICATED, f"signature refused: {problem}")
            reply = inner(request, context)
            signed = self.guard.sign(path, reply.SerializeToString(deterministic=True), body)
            if signed is not None:
                context.send_initial_metadata(((HEADER, signed),))
            return reply

        return grpc.unary_unary_rpc_method_handler(
            call, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer
        )


def v2_of(ledger: Ledger) -> V2:
    """The ledger's one version 2 face (its requests and closed rounds kept across servers)."""
    found = getattr(ledger, "v2", None)
    if found is None:
        found = ledger.v2 = V2(ledger)  # type: ignore[attr-defined]
    return found


def serve_grpc(
    ledger: Ledger, interceptors: Sequence[Any] = (), workers: int = 16, tls: ServerTls | None = None,
    guard: Guard | None = None,
) -> tuple[grpc.Server, int]:  # fmt: skip
    """The ledger as a gRPC server on a free port of 127.0.0.1 (started); (server, port). ``guard``'s check runs
    before the ``interceptors`` (a fault's duplicate delivery is the platform's own, not a replay)."""
    chain = [GuardInterceptor(guard), *interceptors] if guard is not None else list(interceptors)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers), interceptors=chain)
    pb_grpc.add_PlatformWalletServiceServicer_to_server(Servicer(ledger), server)
    pb2_grpc.add_PlatformWalletServiceServicer_to_server(ServicerV2(v2_of(ledger)), server)
    if tls is None:
        port = server.add_insecure_port("127.0.0.1:0")
    else:
        client_ca = tls.client_ca.read_bytes() if tls.client_ca else None
        credentials = grpc.ssl_server_credentials(
            [(tls.key.read_bytes(), tls.cert.read_bytes())], root_certificates=client_ca,
            require_client_auth=client_ca is not None,
        )  # fmt: skip
        port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    return server, port


_HTTP_METHODS: dict[str, tuple[type[Any], Callable[[Ledger, Any], Any]]] = {
    "Debit": (pb.DebitRequest, Ledger.debit),
    "Credit": (pb.CreditRequest, Ledger.credit),
    "Rollback": (pb.RollbackRequest, Ledger.rollback),
    "Balance": (pb.BalanceRequest, Ledger.balance),
    "ListTransactions": (pb.ListTransactionsRequest, Ledger.list_transactions),
}


_HTTP_V2: dict[str, tuple[type[Any], str]] = {
    "Debit": (pb2.DebitRequest, "debit"),
    "Credit": (pb2.CreditRequest, "credit"),
    "Rollback": (pb2.RollbackRequest, "rollback"),
    "Balance": (pb2.BalanceRequest, "balance"),
    "ListTransactions": (pb2.ListTransactionsRequest, "list_transactions"),
}


def serve_http(
    ledger: Ledger, tls: ServerTls | None = None, guard: Guard | None = None
) -> tuple[ThreadingHTTPServer, int]:
    """The ledger as JSON over HTTP(S) on a free port of 127.0.0.1 (serving in a thread); (server, port)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            method = self.path.rsplit("/", 1)[-1]
            found: tuple[type[Any], Callable[[Ledger, Any], Any]] | None = (
                _HTTP_METHODS.get(method) if self.path.startswith("/pokdeng.wallet.v1.") else None
            )
            if self.path.startswith("/pokdeng.wallet.v2."):
                v2 = _HTTP_V2.get(method)
                found = (v2[0], lambda _ledger, r, name=v2[1]: getattr(v2_of(ledger), name)(r)) if v2 else None
            if found is None:
                self.send_error(404)
                return
            request_type, call = found
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            if guard is not None:
                problem = guard.check(self.headers.get(HEADER), self.path, raw)
                if problem:
                    self._answer(401, json.dumps({"error": f"signature refused: {problem}"}).encode(), None)
                    return
            request = json_format.Parse(raw, request_type())
            body = json_format.MessageToJson(call(ledger, request)).encode()
            self._answer(200, body, guard.sign(self.path, body, raw) if guard is not None else None)

        def _answer(self, code: int, body: bytes, signed: str | None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if signed is not None:
                self.send_header(HEADER, signed)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls.cert, tls.key)
        if tls.client_ca is not None:
            context.load_verify_locations(tls.client_ca)
            context.verify_mode = ssl.CERT_REQUIRED
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, name="platform-http", daemon=True).start()
    return server, server.server_address[1]


@contextlib.contextmanager
def running(path: Path, interceptors: Sequence[Any] = ()) -> Any:
    """A ledger at ``path`` served over gRPC: yields (ledger, "127.0.0.1:<port>")."""
    ledger = Ledger(path)
    server, port = serve_grpc(ledger, interceptors)
    try:
        yield ledger, f"127.0.0.1:{port}"
    finally:
        server.stop(0).wait(5)
        ledger.close()
