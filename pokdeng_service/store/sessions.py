"""A player's sessions with the platform's wallet: Hub88's game session tokens (docs/wallet.md, "Hub88: sessions").

Hub88 gives a game session token to the supplier's ``/game/url`` when an operator launches the game for a player,
and expects it in every wallet call of that player. The game server that receives the launch hands it to pokdeng
(``WalletService/OpenWalletSession``); ``WalletSessions`` records it, one stream per player
(``uuid5("wallet-sessions:<player>")``, in the partition of the player's id, as its wallet), each session an event
``Started``: its number (1, 2, ... in the order handed over), its currency, its game code and its token.

The token is the player's secret: it is stored sealed with the vault key (AES-256-GCM, as the server seeds,
``vault.seal_secret``), its associated data binding it to the stream, the player and the session's number
(``token_aad``), so that a sealed token opens only as the session it was recorded for. It is in no round's stream:
a round's outbox names a transaction's session by its number alone (``session`` of ``debit_requested`` and
``credit_requested``), bundles and pages hold no session, and the event feed shows these events without
``sealed`` and ``nonce`` (``application.notifications.address``). A session is never changed or deleted: a new
launch is a new session, and the transactions recorded under an older one keep using it (a win or a rollback after
a restart is sent with the token its bet was sent with).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, cast

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate, event

from pokdeng_service.store.aggregates import NAMESPACE
from pokdeng_service.store.vault import SeedVault

STREAM = "WalletSessions"
"""The stream kind of a player's sessions in the notification log (its class name)."""

MAX_TOKEN = 255  # Hub88's tokens: at most 255 characters


def sessions_uuid(player: str) -> uuid.UUID:
    """The stream of a player's wallet sessions."""
    return uuid.uuid5(NAMESPACE, f"wallet-sessions:{player}")


def token_aad(player: str, number: int) -> bytes:
    """The associated data of a session's sealed token: ``pokdeng-wallet-session-v1`` ‖ 0x00 ‖ the stream's uuid
    (16 bytes) ‖ the session's number (4 bytes, big-endian) ‖ the player (UTF-8). Never a seed's
    (``vault.seal_aad``)."""
    return b"pokdeng-wallet-session-v1\x00" + sessions_uuid(player).bytes + number.to_bytes(4, "big") + player.encode()


@dataclass(frozen=True, slots=True)
class Session:
    """One session as recorded (its token sealed): ``number`` 1, 2, ...; ``started_at`` ISO 8601."""

    player: str
    number: int
    currency: str
    game_code: str
    nonce: str
    sealed: str
    key_id: str
    started_at: str

    def token(self, vault: SeedVault) -> str:
        """The session's token, opened with the vault (``VaultError``: another key, or an edited record)."""
        return vault.open_secret(self.nonce, self.sealed, token_aad(self.player, self.number)).decode()


class WalletSessions(Aggregate):
    """A player's sessions with the platform's wallet, in the order they were handed to pokdeng."""

    player: str
    sessions: dict[int, Session]

    class Opened(Aggregate.Created):
        player: str

    class Started(Aggregate.Event):
        number: int
        currency: str
        game_code: str
        nonce: str
        sealed: str
        key_id: str
        command_id: str

        def apply(self, aggregate: Aggregate) -> None:
            book = cast(WalletSessions, aggregate)
            book.sessions[self.number] = Session(
                book.player, self.number, self.currency, self.game_code, self.nonce, self.sealed, self.key_id,
                self.timestamp.isoformat(),
            )  # fmt: skip

    @staticmethod
    def create_id(player: str) -> uuid.UUID:
        return sessions_uuid(player)

    @event(Opened)
    def __init__(self, player: str) -> None:
        self.player = player
        self.sessions = {}

    @property
    def current(self) -> Session | None:
        """The last session handed over (the one new stakes use), or None."""
        return self.sessions[max(self.sessions)] if self.sessions else None

    def start(
        self, vault: SeedVault, token: str, currency: str, game_code: str, command_id: str
    ) -> Session:  # fmt: skip
        """Record a new session, its token sealed with ``vault``; the session as recorded."""
        number = max(self.sessions, default=0) + 1
        nonce, sealed = vault.seal_secret(token.encode(), token_aad(self.player, number))
        self.trigger_event(
            self.Started, number=number, currency=currency, game_code=game_code, nonce=nonce, sealed=sealed,
            key_id=vault.key_id, command_id=command_id,
        )  # fmt: skip
        return self.sessions[number]


def identity_problem(book: Any, player: str) -> str | None:
    """What is wrong with a loaded stream read as ``player``'s sessions (None: it is)."""
    if not isinstance(book, WalletSessions):
        return "it is not a player's wallet sessions"
    if book.player != player or book.id != sessions_uuid(player):
        return f"it claims to be {book.player!r}'s sessions, whose stream is {sessions_uuid(book.player)}"
    return None


def load_sessions(repository: Any, player: str) -> WalletSessions | None:
    """The player's sessions from the application's repository (None: none recorded; ``ValueError``: the stream is
    not the player's)."""
    try:
        book = repository.get(sessions_uuid(player))
    except AggregateNotFoundError:
        return None
    problem = identity_problem(book, player)
    if problem is not None:
        raise ValueError(f"the wallet sessions stream of {player!r} is refused: {problem}")
    return cast(WalletSessions, book)


__all__ = [
    "MAX_TOKEN",
    "STREAM",
    "Session",
    "WalletSessions",
    "identity_problem",
    "load_sessions",
    "sessions_uuid",
    "token_aad",
]
