"""A reference Hub88 wallet (the supplier wallet API, as Hub88's public documentation describes it) for the tests.

JSON POSTs to ``/user/balance``, ``/transaction/bet``, ``/transaction/win`` and ``/transaction/rollback`` on a free
port of 127.0.0.1, each body signed by the supplier (``X-Hub88-Signature``: base64 RSA PKCS#1 v1.5 SHA-256 of the raw
body, checked with the supplier's public key: else ``RS_ERROR_INVALID_SIGNATURE``, nothing applied), each answer
signed with Hub88's own key. Its ``Hub88Ledger`` keeps balances in Hub88's units (1/100000 of the currency unit) and:

* repeats the first answer to a repeated ``request_uuid`` (request idempotency), except ``/user/balance``;
* applies a ``transaction_uuid`` once: sent again with the same body (user, amount, currency, round, game, reference)
  it is answered as the first time, with another body ``RS_ERROR_DUPLICATE_TRANSACTION``;
* a bet needs a known token (``RS_ERROR_INVALID_TOKEN``), an enabled user (``RS_ERROR_USER_DISABLED``), the user's
  currency (``RS_ERROR_WRONG_CURRENCY``) and the money (``RS_ERROR_NOT_ENOUGH_MONEY``, with the balance);
* a win needs its ``reference_transaction_uuid`` to be an applied bet of the user, not rolled back
  (``RS_ERROR_TRANSACTION_DOES_NOT_EXIST``); tokens are not checked on wins and rollbacks;
* a rollback gives the bet's amount back once; of a bet never seen it leaves a tombstone and answers
  ``RS_ERROR_TRANSACTION_DOES_NOT_EXIST``, and that bet arriving later moves nothing (``RS_ERROR_UNKNOWN``).

It serves under ``/supplier/generic/v2`` (``PREFIX``), as Hub88 does: the URL pokdeng is given is that base.

``faults`` (a ``faults.Faults``: its plan, forced faults and tallies) injects, per money call: ``drop`` (no answer),
``timeout`` (applied, answered too late), ``unavailable`` (HTTP 503, nothing applied), ``lost_reply`` (applied, then
503), ``duplicate`` (delivered twice: the answers must be alike, ``mismatched`` counts those that are not),
``delayed`` (503 now, delivered later). ``transactions`` gives the ledger's record as the reconciliation reads a
platform's (``pokdeng.wallet.v1`` rows in minor units): Hub88's wallet API has no such call, its record is read here.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives.asymmetric import rsa

from pokdeng_service.wallet.hub88 import HEADER, from_hub88, sign, to_hub88, verified
from pokdeng_service.wallet.v1 import wallet_pb2 as pb

from .faults import Faults

PREFIX = "/supplier/generic/v2"
METHODS = {"/transaction/bet": "Debit", "/transaction/win": "Credit", "/transaction/rollback": "Rollback"}


@dataclass
class Tx:
    kind: str  # bet, win, rollback
    uuid: str
    supplier_id: str  # pokdeng's tx id
    user: str
    round: str
    amount: int  # Hub88's units (a rollback: what it gave back)
    currency: str
    status: str
    reference: str = ""
    round_closed: bool = False
    same: tuple[Any, ...] = ()  # what a repeat must have alike (else RS_ERROR_DUPLICATE_TRANSACTION)
    answer: dict[str, Any] = field(default_factory=dict)
    recorded_ms: int = field(default_factory=lambda: int(time.time() * 1000))


@dataclass
class User:
    balance: int  # Hub88's units
    currency: str
    enabled: bool = True


class Hub88Ledger:
    def __init__(self) -> None:
        self.users: dict[str, User] = {}
        self.txs: dict[str, Tx] = {}  # by transaction_uuid
        self.order: list[str] = []
        self.answers: dict[str, dict[str, Any]] = {}  # by request_uuid
        self.rolled_back: dict[str, str] = {}  # bet uuid -> the rollback's uuid
        self.won: dict[str, str] = {}  # bet uuid -> the win's uuid
        self.calls: Counter[str] = Counter()
        self.after_close: list[str] = []  # transactions of a round after its round_closed
        self.closed: set[str] = set()
        self.lock = threading.Lock()

    def open_player(self, user: str, minor: int, currency: str = "THB") -> None:
        with self.lock:
            self.users[user] = User(to_hub88(minor, currency), currency)

    def balance_of(self, user: str) -> int:
        """In pokdeng's minor units."""
        with self.lock:
            found = self.users[user]
            return from_hub88(found.balance, found.currency)

    def balances(self) -> dict[str, int]:
        return {user: self.balance_of(user) for user in list(self.users)}

    # -- the API ----------------------------------------------------------------------------------

    def handle(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.calls[path] += 1
            request = str(body.get("request_uuid", ""))
            if path != "/user/balance" and request in self.answers:
                return self.answers[request]
            answer = self._handle(path, body)
            answer["request_uuid"] = request
            if path != "/user/balance" and answer["status"] != "RS_ERROR_UNKNOWN":
                self.answers[request] = answer
            return answer

    def _handle(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        user = self.users.get(str(body.get("user", "")))
        name = str(body.get("user", ""))
        if path == "/user/balance":
            if user is None or body.get("token") != name:
                return {"status": "RS_ERROR_INVALID_TOKEN", "user": name}
            return self._ok(name, user)
        if user is None:
            return {"status": "RS_ERROR_INVALID_TOKEN", "user": name}
        uuid, amount = str(body["transaction_uuid"]), body.get("amount")
        if not isinstance(amount, int) or amount < 0:
            return {"status": "RS_ERROR_WRONG_TYPES", "user": name}
        if body.get("currency") != user.currency:
            return {**self._ok(name, user), "status": "RS_ERROR_WRONG_CURRENCY"}
        same = tuple(body.get(k) for k in ("user", "amount", "currency", "round", "game_code"))
        same += (body.get("reference_transaction_uuid"),)
        known = self.txs.get(uuid)
        if known is not None:
            if known.same != same:
                return {**self._ok(name, user), "status": "RS_ERROR_DUPLICATE_TRANSACTION"}
            return dict(known.answer)
        round_id = str(body.get("round", ""))
        if round_id in self.closed:
            self.after_close.append(uuid)
        tx = Tx(
            path.rsplit("/", 1)[-1], uuid, str(body.get("supplier_transaction_id", "")), name, round_id, amount,
            user.currency, "RS_OK", str(body.get("reference_transaction_uuid", "")), bool(body.get("round_closed")),
            same,
        )  # fmt: skip
        if tx.kind == "bet":
            answer = self._bet(tx, user, body)
        elif tx.kind == "win":
            answer = self._win(tx, user)
        else:
            answer = self._rollback(tx, user)
        if answer["status"] in ("RS_OK", "RS_ERROR_NOT_ENOUGH_MONEY", "RS_ERROR_TRANSACTION_DOES_NOT_EXIST"):
            tx.status, tx.answer = answer["status"], dict(answer)
            self.txs[uuid] = tx
            self.order.append(uuid)
            if tx.round_closed and tx.status == "RS_OK":
                self.closed.add(tx.round)
        return answer

    def _ok(self, name: str, user: User) -> dict[str, Any]:
        return {"status": "RS_OK", "user": name, "currency": user.currency, "balance": user.balance}

    def _bet(self, tx: Tx, user: User, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("token") != tx.user:
            return {"status": "RS_ERROR_INVALID_TOKEN", "user": tx.user}
        if not user.enabled:
            return {"status": "RS_ERROR_USER_DISABLED", "user": tx.user}
        if tx.uuid in self.rolled_back:  # rolled back before it arrived: never applied
            return {"status": "RS_ERROR_UNKNOWN", "user": tx.user}
        if user.balance < tx.amount:
            return {**self._ok(tx.user, user), "status": "RS_ERROR_NOT_ENOUGH_MONEY"}
        user.balance -= tx.amount
        return self._ok(tx.user, user)

    def _win(self, tx: Tx, user: User) -> dict[str, Any]:
        bet = self.txs.get(tx.reference)
        if (
            bet is None or bet.kind != "bet" or bet.status != "RS_OK" or bet.user != tx.user
            or tx.reference in self.rolled_back or tx.reference in self.won
        ):  # fmt: skip
            return {**self._ok(tx.user, user), "status": "RS_ERROR_TRANSACTION_DOES_NOT_EXIST"}
        self.won[tx.reference] = tx.uuid
        user.balance += tx.amount
        return self._ok(tx.user, user)

    def _rollback(self, tx: Tx, user: User) -> dict[str, Any]:
        bet = self.txs.get(tx.reference)
        if tx.reference in self.won:
            return {"status": "RS_ERROR_UNKNOWN", "user": tx.user}  # (settled by a win: never undone)
        if tx.reference in self.rolled_back:  # (by another rollback transaction: not ours to undo twice)
            return {"status": "RS_ERROR_UNKNOWN", "user": tx.user}
        self.rolled_back[tx.reference] = tx.uuid
        if bet is None or bet.kind != "bet" or bet.status != "RS_OK":
            tx.amount = 0
            return {**self._ok(tx.user, user), "status": "RS_ERROR_TRANSACTION_DOES_NOT_EXIST"}
        tx.amount = bet.amount
        user.balance += bet.amount
        return self._ok(tx.user, user)

    # -- the record, as the reconciliation reads a platform's ---------------------------------------

    def transactions(self, since_ms: int, until_ms: int = 0, page_size: int = 1000) -> Iterator[pb.Transaction]:
        del page_size
        with self.lock:
            txs = [self.txs[u] for u in self.order]
        for tx in txs:
            if tx.recorded_ms < since_ms or (until_ms and tx.recorded_ms >= until_ms):
                continue
            amount = from_hub88(tx.amount, tx.currency)
            common: dict[str, Any] = {
                "player": tx.user, "round_id": tx.round, "amount": amount, "currency": tx.currency,
                "recorded_unix_ms": tx.recorded_ms,
            }  # fmt: skip
            if tx.kind == "bet":
                ok = tx.status == "RS_OK"
                status = pb.TRANSACTION_STATUS_APPLIED if ok else pb.TRANSACTION_STATUS_INSUFFICIENT_FUNDS
                yield pb.Transaction(tx_id=tx.supplier_id, kind=pb.TRANSACTION_KIND_DEBIT, status=status, **common)
            elif tx.kind == "win":
                bet = self.txs[tx.reference]
                yield pb.Transaction(
                    tx_id=tx.supplier_id, kind=pb.TRANSACTION_KIND_CREDIT, status=pb.TRANSACTION_STATUS_APPLIED,
                    debit_tx_ids=[bet.supplier_id], **common,
                )  # fmt: skip
            else:
                debit = tx.supplier_id.removesuffix(":rollback")
                yield pb.Transaction(
                    tx_id=debit, kind=pb.TRANSACTION_KIND_ROLLBACK, status=pb.TRANSACTION_STATUS_ROLLED_BACK,
                    debit_tx_ids=[debit], **common,
                )  # fmt: skip

    def close(self) -> None:
        pass


@dataclass
class Hub88Server:
    ledger: Hub88Ledger
    faults: Faults
    server: ThreadingHTTPServer
    url: str

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.faults.wait_delayed()


def serve(
    ledger: Hub88Ledger, supplier_key: rsa.RSAPublicKey, hub88_key: rsa.RSAPrivateKey, faults: Faults | None = None
) -> Hub88Server:
    """``ledger`` as Hub88's wallet API on a free port of 127.0.0.1 (serving in a thread)."""
    chaos = faults or Faults()

    def answer_of(path: str, raw: bytes, signature: str | None) -> dict[str, Any]:
        if not verified([supplier_key], signature, raw):
            return {"status": "RS_ERROR_INVALID_SIGNATURE"}
        try:
            body = json.loads(raw)
        except ValueError:
            return {"status": "RS_ERROR_WRONG_SYNTAX"}
        return ledger.handle(path, body)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            signature = self.headers.get(HEADER)
            path = self.path.removeprefix(PREFIX) if self.path.startswith(f"{PREFIX}/") else ""
            method = METHODS.get(path)
            if path != "/user/balance" and method is None:
                self.send_error(404)
                return
            kind = chaos._choose(method) if method else None
            if kind is not None:
                with chaos._lock:
                    chaos.counts[kind] += 1
                    chaos.by_method[f"{method}:{kind}"] += 1
            if kind == "drop":
                time.sleep(chaos.plan.hold)
                self.close_connection = True
                return
            if kind in ("unavailable", "delayed"):
                if kind == "delayed":
                    timer = threading.Timer(chaos.random.uniform(*chaos.plan.delay), answer_of, (path, raw, signature))
                    timer.daemon = True
                    chaos._timers.append(timer)
                    timer.start()
                self._send(503, {"status": "unavailable"})
                return
            answer = answer_of(path, raw, signature)
            if kind == "duplicate":
                again = answer_of(path, raw, signature)
                if again != answer:
                    chaos.mismatched += 1
            if kind == "timeout":
                time.sleep(chaos.plan.hold)
            if kind == "lost_reply":
                self._send(503, {"status": "reply lost"})
                return
            self._send(200, answer)

        def _send(self, code: int, answer: dict[str, Any]) -> None:
            body = json.dumps(answer).encode()
            with contextlib.suppress(OSError):  # (the caller gone: a timed-out call)
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header(HEADER, sign(hub88_key, body))
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, name="hub88", daemon=True).start()
    return Hub88Server(ledger, chaos, server, f"http://127.0.0.1:{server.server_address[1]}{PREFIX}")


__all__ = ["Hub88Ledger", "Hub88Server", "serve"]
