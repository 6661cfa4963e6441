"""The store's log of closed rounds: the leaf a round's close appends, signed tree heads, and proofs.

* ``log_closed_round(attempt, record)``: the round handlers' close (``rounds._book_money``)
  appends the round's leaf to the store's ``RoundLog`` in the same transaction as the table's
  ``round_finished``; the log is created (with a fresh log id) by the store's first close. Every
  close in a store writes this one stream: two closes at once conflict on it, and the pipeline
  retries the later one, as for any version conflict.
* ``SignTreeHead``'s handler: the operator's signed tree head over the log as it is (operator
  only; the key is the application's ``signing_keys``, never stored in the database), and the
  same head as a C2SP checkpoint note (``store/notes.py``), signed by the same key under the log's
  origin: ``$POKDENG_LOG_ORIGIN`` (the application's environment; default ``pokdeng.example``)
  and ``/`` and the log id, fixed by the log's first note.
* ``LogQueries`` (a mixin of ``PokdengApp``): the log's leaves and heads read afresh from the
  store, a round's *anchor* (the latest signed head that covers it, and the inclusion proof),
  and consistency proofs between two tree sizes (RFC 9162).

docs/checkpoints.md describes the formats.
"""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application

from pokdeng_core.errors import DomainError, InvalidCommand
from pokdeng_service.application.attempt import Attempt
from pokdeng_service.application.commands import SignTreeHead
from pokdeng_service.application.errors import NotFound
from pokdeng_service.application.pipeline import Outcome, handler
from pokdeng_service.store import fastpaths, merkle
from pokdeng_service.store.aggregates import RoundRecord
from pokdeng_service.store.facts import RecordedEvent
from pokdeng_service.store.notes import ORIGIN_ENV, NoteError
from pokdeng_service.store.roundlog import (
    ROUND_LOG_UUID,
    LogRecord,
    RoundLog,
    covers,
    leaf_problem,
    new_log_id,
    read_log,
)
from pokdeng_service.store.signing import KeyRing, TreeHead

_LOADED = ("log", "")


def round_log(attempt: Attempt, *, create: bool = False) -> RoundLog | None:
    """The store's log, loaded once an attempt; a new one if ``create`` and the store has none."""
    found = attempt.loaded.get(_LOADED)
    if found is None:
        attempt.hold(attempt.app.log_lock)  # every close writes the log: closes in this process take turns
        found = attempt.app.load_round_log()
        if found is None:
            if not create:
                return None
            found = RoundLog(new_log_id())
        attempt.loaded[_LOADED] = found
    assert isinstance(found, RoundLog)
    return found


def log_closed_round(attempt: Attempt, record: RoundRecord) -> RoundLog:
    """Append the closed round's leaf (its id and last chain digest) to the store's log."""
    log = round_log(attempt, create=True)
    assert log is not None
    log.append(record.round_id, record.last_digest)
    return log


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@handler(SignTreeHead)
def sign_tree_head(attempt: Attempt, command: SignTreeHead) -> Outcome:
    """A signed tree head over every closed round of the store so far (docs/checkpoints.md)."""
    key = attempt.app.signing_keys.current
    if key is None:
        raise DomainError(
            "no signing key is configured: create one with `pokdeng keys new` (or set POKDENG_SIGNING_KEY), then "
            "restart the server (it reads its keys when it starts)"
        )
    log = round_log(attempt)
    if log is None:
        raise DomainError("no round has closed in this store yet: its log is empty")
    problem = _unsignable(log, read_log(attempt.app.log_events()))
    if problem is not None:
        raise DomainError(
            f"the store's log is not what this server wrote ({problem}): nothing is signed; audit it (`pokdeng "
            "checkpoints audit`, docs/operations.md) before any head is signed again"
        )
    try:
        log.sign(key, now_ms(), attempt.app.log_origin_prefix())
    except NoteError as error:
        raise DomainError(f"no head is signed: {error}") from None
    return Outcome((log,), log, "log", log.log_id)


def _unsignable(log: RoundLog, stored: LogRecord) -> str | None:
    """What forbids signing a head over the log, or None: its rows as stored (read afresh) must be the log this
    server holds (every leaf the hash of its round and digest, in its place, the same root), and the latest head
    signed before must be the root of the leaves it covered. A head signed over rows rewritten under the server
    would vouch for them (found from the outside: a rewritten log was signed again)."""
    hashes = stored.hashes
    problem = next(filter(None, (leaf_problem(i, leaf) for i, leaf in enumerate(stored.leaves))), None)
    if problem is not None:
        return problem
    if len(hashes) != log.size or merkle.root(hashes) != log.root:
        return f"its {len(hashes)} stored leaves are not the {log.size} this server appended"
    if stored.heads and not covers(stored.heads[-1][1], hashes):
        return f"its last signed head (size {stored.heads[-1][1].tree_size}) is not the root of the leaves it covered"
    return None


class LogQueries(Application[UUID]):
    """Reads of the store's log (``PokdengApp`` sets ``signing_keys``)."""

    signing_keys: KeyRing

    def load_round_log(self) -> RoundLog | None:
        """The log as the commands see it (the aggregate cache), or None before the store's first close."""
        try:
            log: Any = self.repository.get(ROUND_LOG_UUID, projector_func=fastpaths.project)
        except AggregateNotFoundError:
            return None
        if not isinstance(log, RoundLog):
            raise NotFound("the store's round log is not a round log")
        return log

    def log_events(self) -> list[RecordedEvent]:
        """The log's stored events, read afresh (an edit of the stored rows is seen by a running server)."""
        return fastpaths.facts_of_rows(self.mapper, self.recorder.select_events(ROUND_LOG_UUID))

    def log_origin_prefix(self) -> str:
        """``$POKDENG_LOG_ORIGIN`` (the application's environment): the prefix of a log's origin, "" for the
        default (``store/notes.py``); a log's first note fixes its origin."""
        return str(self.env.get(ORIGIN_ENV, "") or "")

    def read_log(self) -> LogRecord:
        return read_log(self.log_events())

    def tree_head(self, tree_size: int = 0) -> TreeHead:
        """The latest signed head (``tree_size`` 0), or the latest one of exactly that size."""
        return self.tree_head_note(tree_size)[0]

    def tree_head_note(self, tree_size: int = 0) -> tuple[TreeHead, str]:
        """``tree_head`` and its C2SP checkpoint note ("" for a head signed before notes were)."""
        log = self.read_log()
        heads = [(p, head) for p, head in log.heads if not tree_size or head.tree_size == tree_size]
        if not heads:
            which = f" of size {tree_size}" if tree_size else ""
            raise NotFound(f"no signed tree head{which} in this store yet (SignTreeHead)", tree_size=str(tree_size))
        position, head = heads[-1]
        return head, log.notes.get(position, "")

    def log_anchor(self, round_id: str) -> dict[str, Any] | None:
        """A closed round's anchor: the latest signed head covering its leaf, and the inclusion proof.

        None while no signed head covers it (or when it closed before the store had a log).
        """
        log = self.read_log()
        index = next((i for i, leaf in enumerate(log.leaves) if leaf.round_id == round_id), None)
        if index is None:
            return None
        covering = [head for _p, head in log.heads if head.tree_size > index]
        if not covering:
            return None
        head = covering[-1]
        hashes = log.hashes[: head.tree_size]
        return {
            "index": index,
            "leaf": log.leaves[index].leaf,
            "path": [h.hex() for h in merkle.inclusion_proof(hashes, index)],
            "head": head.as_dict(),
        }

    def consistency_proof(self, first: int, second: int = 0) -> dict[str, Any]:
        """RFC 9162 PROOF(first, D[second]) over the log (``second`` 0: the log's size), for 0 < first <= second:
        the RFC defines no proof from the empty tree (section 2.1.4), and verifiers refuse one."""
        log = self.read_log()
        size = len(log.leaves)
        second = second or size
        if not 0 < first <= second <= size:
            raise InvalidCommand(
                f"the sizes must satisfy 0 < first <= second <= {size} (no consistency proof starts from the empty "
                "tree: RFC 9162 section 2.1.4)",
                field="first",
            )
        proof = merkle.consistency_proof(log.hashes[:second], first)
        return {"log_id": log.log_id, "first": first, "second": second, "path": [h.hex() for h in proof]}
