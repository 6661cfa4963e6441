"""Every answer a client got, kept to be asked for again; clients of several replicas; conflicts in a store's log.

* ``RecordingClient``: a ``HarnessClient`` that keeps, for every command it got an answer to, the request
  message, its token, the answer, when it was sent and answered, and whether it took more than one attempt
  (it was in flight while a server or the store went away). With several ``targets`` its channel spreads
  the calls over them (gRPC's ``round_robin``): a call that fails on a killed replica is retried, with the
  same request id, on the other one.
* ``check_first_answers``: every kept command sent again with its request id and token, after whatever
  happened in between (a replica killed, the database failed over): each answer must be flagged a replay
  (``pokdeng-replayed``) and carry the events of the first answer (sequence, kind, chain digest, record
  time, request id), whichever replica answers.
* ``store_conflicts``: PostgreSQL's log of a cluster lists every unique violation with its key; those on
  the events table are optimistic-concurrency conflicts, counted by the stream they hit: the store's round
  log (``RoundLog``, which every close appends to), a request's record (a request carried out already), a
  table, a wallet or a round.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import grpc

from .client import REPLAYED, HarnessClient
from .server import FAST_RECONNECT


def spread_target(targets: Sequence[str]) -> str:
    """One gRPC target naming every replica (``ipv4:127.0.0.1:5001,127.0.0.1:5002``)."""
    return targets[0] if len(targets) == 1 else "ipv4:" + ",".join(targets)


SPREAD = (*FAST_RECONNECT, ("grpc.lb_policy_name", "round_robin"))


@dataclass(frozen=True)
class Answer:
    service: str
    method: str
    message: Any
    metadata: tuple[tuple[str, str], ...]
    response: Any
    sent: float  # monotonic
    answered: float
    retried: bool  # more than one attempt: the first was lost (a replica killed, the store gone)
    replayed: bool


@dataclass
class Answers:
    """Answers by request id (shared by the clients of a run)."""

    by_request: dict[str, Answer] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, answer: Answer) -> None:
        with self.lock:
            self.by_request.setdefault(answer.message.request_id, answer)

    def all(self) -> list[Answer]:
        with self.lock:
            return list(self.by_request.values())


class RecordingClient(HarnessClient):
    """A ``HarnessClient`` that keeps every command's answer in ``answers``; several ``targets``: round robin."""

    def __init__(self, targets: Sequence[str], answers: Answers, token: str | None = None, **options: Any) -> None:
        super().__init__(targets[0], token, **options)
        if len(targets) > 1:
            self.channel.close()
            self.channel = grpc.insecure_channel(spread_target(targets), options=SPREAD)
            self.stubs = {name: type(stub)(self.channel) for name, stub in self.stubs.items()}
        self.answers = answers

    def send(self, service: str, method: str, **fields: Any) -> Any:
        if "request_id" not in fields:
            return super().send(service, method, **fields)
        sent = time.monotonic()
        retried, replays = self.stats.retried_calls, sum(self.stats.replayed.values())
        response = super().send(service, method, **fields)
        message = self.request(service, method, **fields)
        self.answers.add(
            Answer(
                service,
                method,
                message,
                self.metadata,
                response,
                sent,
                time.monotonic(),
                self.stats.retried_calls != retried,
                sum(self.stats.replayed.values()) != replays,
            )
        )
        return response


def sample(answers: Sequence[Answer], size: int | None, seed: int = 7) -> list[Answer]:
    """Every answer that was retried or a replay, and ``size`` of the others (None: all), in the order sent."""
    if size is None:
        return list(answers)
    special = [a for a in answers if a.retried or a.replayed]
    rest = [a for a in answers if not (a.retried or a.replayed)]
    chosen = random.Random(seed).sample(rest, min(size, len(rest)))
    return sorted([*special, *chosen], key=lambda a: a.sent)


def event_keys(response: Any) -> list[tuple[Any, ...]]:
    """What identifies the events of a command's answer: the same events, however often it is asked."""
    return [
        (e.sequence, e.kind, e.chain_digest, e.record_time.ToMicroseconds(), e.request_id)
        for e in getattr(response, "events", ())
    ]


@dataclass
class FirstAnswers:
    checked: int = 0
    problems: list[str] = field(default_factory=list)


def check_first_answers(client: HarnessClient, answers: Iterable[Answer], *, patience: float = 30.0) -> FirstAnswers:
    """Each command again, as it was sent (request id, token): a replay with the first answer's events."""
    found = FirstAnswers()
    for answer in answers:
        stub = getattr(client.stubs[answer.service], answer.method)
        give_up = time.monotonic() + patience
        while True:
            try:
                response, call = stub.with_call(answer.message, metadata=answer.metadata, timeout=15)
                break
            except grpc.RpcError as error:
                code = error.code() if isinstance(error, grpc.Call) else None
                if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED) or time.monotonic() > give_up:
                    found.problems.append(f"{answer.message.request_id}: asked again, {code}: {error}")
                    response = None
                    break
                time.sleep(0.05)
        if response is None:
            continue
        found.checked += 1
        flags = dict(call.trailing_metadata() or ())
        if flags.get(REPLAYED) != "true":
            found.problems.append(f"{answer.message.request_id}: asked again, carried out again (not a replay)")
        if event_keys(response) != event_keys(answer.response):
            found.problems.append(
                f"{answer.message.request_id}: asked again, other events: {event_keys(response)[:2]} "
                f"!= {event_keys(answer.response)[:2]}"
            )
    return found


_DETAIL = re.compile(r"Key \(originator_id, originator_version\)=\(([0-9a-f-]{36}), (\d+)\) already exists")


def log_size(log: Path | str) -> int:
    try:
        return Path(log).stat().st_size
    except OSError:
        return 0


def store_conflicts(log: Path | str, names: dict[UUID, str], upto: int | None = None) -> Counter[str]:
    """Unique violations on the events table in a PostgreSQL log (its first ``upto`` bytes), by the kind of
    stream they hit (``names``: stream uuid -> kind; the store's round log is ``log``; any other uuid is a
    request's record: a request carried out already)."""
    from pokdeng_service.store.roundlog import ROUND_LOG_UUID

    try:
        with open(log, "rb") as file:
            text = file.read(upto if upto is not None else -1).decode(errors="replace")
    except OSError:
        return Counter()
    found: Counter[str] = Counter()
    for match in _DETAIL.finditer(text):
        uuid = UUID(match.group(1))
        found["log" if uuid == ROUND_LOG_UUID else names.get(uuid, "request")] += 1
    return found


def stream_names(tables: Iterable[str], wallets: Iterable[str], rounds: Iterable[str]) -> dict[UUID, str]:
    from pokdeng_service.store import aggregates as ag

    names = {ag.table_uuid(t): "table" for t in tables}
    names.update({ag.wallet_uuid(w): "wallet" for w in wallets})
    for r in rounds:
        names[ag.round_uuid(r)] = "round"
        names[ag.seed_uuid(r)] = "seed"
    return names
