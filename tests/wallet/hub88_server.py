"""A reference Hub88 wallet (the supplier wallet API, as Hub88's public documentation describes it) for the tests.

JSON POSTs to ``/user/balance``, ``/transaction/bet``, ``/transaction/win`` and ``/transaction/rollback`` under
``/supplier/generic/v2`` (``PREFIX``) on a free port of 127.0.0.1, over HTTP or HTTPS (``tls``), each body signed by
the supplier (``X-Hub88-Signature``: base64 RSA PKCS#1 v1.5 SHA-256 of the raw body, checked with the supplier's public
key: else ``RS_ERROR_INVALID_SIGNATURE``, nothing applied), each answer signed with Hub88's own key. Its ``Hub88Ledger``
keeps balances in Hub88's units (1/100000 of the currency unit) and:

* **sessions**: ``launch(user, currency, game_code)`` is the game's launch (Hub88 calling the supplier's
  ``/game/url``): it issues the game session token; ``expire(token)`` ends it;
* **the schema**: a body must have the fields Hub88's Wallet API reference requires of its path, none it does not
  list (``hub88.FIELDS``: ``RS_ERROR_WRONG_SYNTAX``), each of its type, uuids where it wants uuids
  (``RS_ERROR_WRONG_TYPES``);
* **tokens**: ``/user/balance`` and a bet need a token it issued (``RS_ERROR_INVALID_TOKEN``) that has not expired
  (``RS_ERROR_TOKEN_EXPIRED``), a bet one of its own user; a win and a rollback need a token it issued to their user,
  and are processed whatever its age (Hub88: token validity must not be checked on wins and rollbacks);
* repeats the first answer to a repeated ``request_uuid`` (request idempotency), except ``/user/balance``;
* applies a ``transaction_uuid`` once: sent again with the same body (user, amount, currency, round, game, reference)
  it is answered as the first time, with another body ``RS_ERROR_DUPLICATE_TRANSACTION``;
* a bet needs an enabled user (``RS_ERROR_USER_DISABLED``), the user's currency (``RS_ERROR_WRONG_CURRENCY``) and the
  money (``RS_ERROR_NOT_ENOUGH_MONEY``, with the balance);
* a win needs its ``reference_transaction_uuid`` to be an applied bet of the user, not rolled back
  (``RS_ERROR_TRANSACTION_DOES_NOT_EXIST``);
* a rollback gives the bet's amount back once; of a bet never seen it leaves a tombstone and answers
  ``RS_ERROR_TRANSACTION_DOES_NOT_EXIST``, and that bet arriving later moves nothing (``RS_ERROR_UNKNOWN``).

``faults`` (a ``faults.Faults``: its plan, forced faults and tallies) injects, per money call: ``drop`` (no answer),
``timeout`` (applied, answered too late), ``unavailable`` (HTTP 503, nothing applied), ``lost_reply`` (applied, then
503), ``duplicate`` (delivered twice: the answers must be alike, ``mismatched`` counts those that are not),
``delayed`` (503 now, delivered later), ``stale_reply`` (applied, answered with the path's previous answer: another
request's), ``kill`` (its ``on_kill``: a bet applied first, a win after). ``transactions`` gives the ledger's record as
the reconciliation reads a platform's (``pokdeng.wallet.v1`` rows in minor units): Hub88 lists no transactions to a
supplier, its record is read here.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import rsa

from pokdeng_service.wallet.hub88 import FIELDS, HEADER, from_hub88, sign, to_hub88, verified
from pokdeng_service.wallet.v1 import wallet_pb2 as pb

from .faults import Faults

PREFIX = "/supplier/generic/v2"
METHODS = {"/transaction/bet": "Debit", "/transaction/win": "Credit", "/transaction/rollback": "Rollback"}
TYPES: dict[str, type | tuple[type, ...]] = {
    "round_closed": bool, "is_free": bool, "is_aggregated": bool, "is_supplier_promo": bool, "meta": dict,
    "amount": int, "jackpot_contribution": int, "game_code": (str, type(None)),
}  # fmt: skip
UUIDS = ("request_uuid", "transaction_uuid", "reference_transaction_uuid")


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
    token: str = ""
    same: tuple[Any, ...] = ()  # what a repeat must have alike (else RS_ERROR_DUPLICATE_TRANSACTION)
    answer: dict[str, Any] = field(default_factory=dict)
    recorded_ms: int = field(default_factory=lambda: int(time.time() * 1000))


@dataclass
class User:
    balance: int  # Hub88's units
    currency: str
    enabled: bool = True


@dataclass
class Launch:
    """A game session: what ``/game/url`` gave the supplier."""

    user: str
    currency: str
    game_code: str
    expired: bool = False


def body_problem(path: str, body: Any) -> str | None:
    """The status refusing a body that is not of the path's schema (None: it is)."""
    required, optional = FIELDS[path]
    if not isinstance(body, dict) or not required <= body.keys() or body.keys() - required - optional:
        return "RS_ERROR_WRONG_SYNTAX"
    for name, value in body.items():
        want = TYPES.get(name, str)
        if (type(value) is bool and want is int) or not isinstance(value, want):
            return "RS_ERROR_WRONG_TYPES"
    if body.get("amount", 0) < 0:
        return "RS_ERROR_WRONG_TYPES"
    for name in UUIDS:
        if name in body:
            try:
                uuid.UUID(body[name])
            except ValueError:
                return "RS_ERROR_WRONG_TYPES"
    return None


class Hub88Ledger:
    def __init__(self) -> None:
        self.users: dict[str, User] = {}
        self.tokens: dict[str, Launch] = {}
        self.txs: dict[str, Tx] = {}  # by transaction_uuid
        self.order: list[str] = []
        self.answers: dict[str, dict[str, Any]] = {}  # by request_uuid
        self.rolled_back: dict[str, str] = {}  # bet uuid -> the rollback's uuid
        self.won: dict[str, str] = {}  # bet uuid -> the win's uuid
        self.calls: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()  # statuses of the requests refused before any money (by status)
        self.after_close: list[str] = []  # transactions of a round after its round_closed
        self.closed: set[str] = set()
        self.lock = threading.Lock()

    def open_player(self, user: str, minor: int, currency: str = "THB") -> None:
        with self.lock:
            self.users[user] = User(to_hub88(minor, currency), currency)

    def launch(self, user: str, currency: str = "THB", game_code: str = "pokdeng") -> str:
        """The game's launch for ``user`` (Hub88 calls the supplier's ``/game/url``): the new session's token."""
        token = str(uuid.uuid4())
        with self.lock:
            self.tokens[token] = Launch(user, currency, game_code)
        return token

    def expire(self, token: str) -> None:
        with self.lock:
            self.tokens[token].expired = True

    def balance_of(self, user: str) -> int:
        """In pokdeng's minor units."""
        with self.lock:
            found = self.users[user]
            return from_hub88(found.balance, found.currency)

    def balances(self) -> dict[str, int]:
        return {user: self.balance_of(user) for user in list(self.users)}

    # -- the API ----------------------------------------------------------------------------------

    def handle(self, path: str, body: Any) -> dict[str, Any]:
        with self.lock:
            self.calls[path] += 1
            request = str(body.get("request_uuid", "")) if isinstance(body, dict) else ""
            if path != "/user/balance" and request in self.answers:
                return self.answers[request]
            problem = body_problem(path, body)
            answer = {"status": problem} if problem else self._handle(path, body)
            answer["request_uuid"] = request
            if answer["status"] != "RS_OK":
                self.refused[answer["status"]] += 1
            if path != "/user/balance" and answer["status"] != "RS_ERROR_UNKNOWN" and not problem:
                self.answers[request] = answer
            return answer

    def _token_problem(self, path: str, token: str, user: str | None) -> str | None:
        """Hub88's check of a call's session token (None: accepted)."""
        launch = self.tokens.get(token)
        if launch is None or (user is not None and launch.user != user):
            return "RS_ERROR_INVALID_TOKEN"
        if launch.expired and path in ("/user/balance", "/transaction/bet"):
            return "RS_ERROR_TOKEN_EXPIRED"  # (never on a win or a rollback: they come after the bet was played)
        return None

    def _handle(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        token = body["token"]
        if path == "/user/balance":
            problem = self._token_problem(path, token, None)
            if problem:
                return {"status": problem}
            name = self.tokens[token].user
            user = self.users.get(name)
            return {"status": "RS_ERROR_USER_DISABLED", "user": name} if user is None else self._ok(name, user)
        name = body["user"]
        problem = self._token_problem(path, token, name)
        user = self.users.get(name)
        if problem or user is None:
            return {"status": problem or "RS_ERROR_INVALID_TOKEN", "user": name}
        uuid_ = body["transaction_uuid"]
        if path != "/transaction/rollback" and body["currency"] != user.currency:
            return {**self._ok(name, user), "status": "RS_ERROR_WRONG_CURRENCY"}
        same = tuple(body.get(k) for k in ("user", "amount", "currency", "round", "game_code"))
        same += (body.get("reference_transaction_uuid"),)
        known = self.txs.get(uuid_)
        if known is not None:
            if known.same != same:
                return {**self._ok(name, user), "status": "RS_ERROR_DUPLICATE_TRANSACTION"}
            return dict(known.answer)
        round_id = body["round"]
        if round_id in self.closed:
            self.after_close.append(uuid_)
        tx = Tx(
            path.rsplit("/", 1)[-1], uuid_, body["supplier_transaction_id"], name, round_id, int(body.get("amount", 0)),
            user.currency, "RS_OK", str(body.get("reference_transaction_uuid", "")), bool(body.get("round_closed")),
            token, same,
        )  # fmt: skip
        if tx.kind == "bet":
            answer = self._bet(tx, user)
        elif tx.kind == "win":
            answer = self._win(tx, user)
        else:
            answer = self._rollback(tx, user)
        if answer["status"] in ("RS_OK", "RS_ERROR_NOT_ENOUGH_MONEY", "RS_ERROR_TRANSACTION_DOES_NOT_EXIST"):
            tx.status, tx.answer = answer["status"], dict(answer)
            self.txs[uuid_] = tx
            self.order.append(uuid_)
            if tx.round_closed and tx.status == "RS_OK":
                self.closed.add(tx.round)
        return answer

    def _ok(self, name: str, user: User) -> dict[str, Any]:
        return {"status": "RS_OK", "user": name, "currency": user.currency, "balance": user.balance}

    def _bet(self, tx: Tx, user: User) -> dict[str, Any]:
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
        tx.amount, tx.currency = bet.amount, bet.currency
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
    ledger: Hub88Ledger, supplier_key: rsa.RSAPublicKey, hub88_key: rsa.RSAPrivateKey, faults: Faults | None = None,
    tls: tuple[Path, Path] | None = None,
) -> Hub88Server:  # fmt: skip
    """``ledger`` as Hub88's wallet API on a free port of 127.0.0.1 (serving in a thread); ``tls``: (certificate,
    key) of its HTTPS."""
    chaos = faults or Faults()
    last: dict[str, dict[str, Any]] = {}  # per path, the last answer (a stale reply)

    def answer_of(path: str, raw: bytes, signature: str | None) -> dict[str, Any]:
        if not verified([supplier_key], signature, raw):
            with ledger.lock:
                ledger.refused["RS_ERROR_INVALID_SIGNATURE"] += 1
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
            if path not in FIELDS:
                self.send_error(404)
                return
            method = METHODS.get(path)
            kind = chaos._choose(method) if method else None
            if kind is not None:
                with chaos._lock:
                    chaos.counts[kind] += 1
                    chaos.by_method[f"{method}:{kind}"] += 1
            if kind in ("drop", "unavailable", "delayed", "kill"):
                self._unanswered(kind, method, path, raw, signature)
                return
            answer = answer_of(path, raw, signature)
            if kind == "duplicate" and answer_of(path, raw, signature) != answer:
                with chaos._lock:
                    chaos.mismatched += 1
            if kind == "timeout":
                time.sleep(chaos.plan.hold)
            if kind == "lost_reply":
                self._send(503, {"status": "reply lost"})
                return
            stale, last[path] = last.get(path), answer
            self._send(200, stale if kind == "stale_reply" and stale is not None else answer)

        def _unanswered(self, kind: str, method: str | None, path: str, raw: bytes, signature: str | None) -> None:
            if kind == "drop":
                time.sleep(chaos.plan.hold)
                self.close_connection = True
                return
            if kind == "delayed":
                timer = threading.Timer(chaos.random.uniform(*chaos.plan.delay), answer_of, (path, raw, signature))
                timer.daemon = True
                chaos._timers.append(timer)
                timer.start()
            if kind == "kill":
                assert chaos.on_kill is not None
                if method == "Debit":
                    answer_of(path, raw, signature)  # Hub88 took the money; pokdeng dies before it hears so
                chaos.on_kill()
                if method != "Debit":
                    answer_of(path, raw, signature)
            self._send(503, {"status": "unavailable"})

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
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    threading.Thread(target=server.serve_forever, name="hub88", daemon=True).start()
    return Hub88Server(ledger, chaos, server, f"{scheme}://127.0.0.1:{server.server_address[1]}{PREFIX}")


__all__ = ["Hub88Ledger", "Hub88Server", "Launch", "body_problem", "serve"]
