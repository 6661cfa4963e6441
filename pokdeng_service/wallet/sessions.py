"""The players' wallet sessions, as the platform's wallet calls use them (``--wallet hub88``, docs/wallet.md "Hub88").

An operator hands pokdeng a player's session (``OpenWalletSession``: Hub88's game session token of the game's
launch, its currency and game code); the store records it, its token sealed (``store.sessions``). ``SessionBook``
reads them back for the remote port:

* ``current(player, currency)``: the player's newest session, the one a new stake or balance uses, read from the
  store each time (another server may have recorded a newer one); ``WalletSessionMissing`` if the player has none,
  ``CurrencyMismatch`` if its currency is not the table's: then nothing is sent to the platform;
* ``session(player, number)``: the token and game code of a recorded session, opened with the vault key (and kept
  in memory: a session never changes), for a transaction recorded with that session's number: its bet, and the
  win or rollback of that bet, before or after a restart, are sent with the same token.

A player's sessions live in the partition of the player's id (as its wallet), read through that partition's
application whatever the round's partition.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pokdeng_core.errors import CurrencyMismatch
from pokdeng_service.application.errors import WalletSessionMissing
from pokdeng_service.application.partitions import partition_of
from pokdeng_service.store.sessions import Session

KEPT = 10_000
"""Opened sessions kept in memory (the oldest forgotten first: they are read and opened again if needed)."""


@dataclass(frozen=True)
class PlayerSession:
    """The wallet session a call is sent with: Hub88's game session token and the game it was launched for."""

    token: str = field(repr=False)
    game_code: str = ""


class SessionRefused(ValueError):
    """What a transport raises when the platform refuses the call's wallet session (Hub88: ``RS_ERROR_INVALID_TOKEN``,
    ``RS_ERROR_TOKEN_EXPIRED``): no definite answer about the money, and no use retrying with that session."""

    def __init__(self, status: str) -> None:
        super().__init__(f"the platform refuses the wallet session: {status}")
        self.status = status


class SessionBook:
    """The players' sessions of a deployment's partitions (``apps``, in partition order)."""

    def __init__(self, apps: Sequence[Any]) -> None:
        self.apps = list(apps)
        self._opened: OrderedDict[tuple[str, int], PlayerSession] = OrderedDict()
        self._lock = threading.Lock()

    def _app(self, player: str) -> Any:
        return self.apps[partition_of(player, len(self.apps))]

    def newest(self, player: str) -> Session | None:
        """The player's newest session as stored now (None: none)."""
        book = self._app(player).load_sessions(player)
        return None if book is None else book.current

    def current(self, player: str, currency: str) -> Session:
        """The session a new stake or balance of ``player`` in ``currency`` uses: its newest."""
        found = self.newest(player)
        if found is None:
            raise WalletSessionMissing(
                f"player {player!r} has no session with the platform's wallet: the game must be launched for the "
                "player and its session handed to pokdeng (WalletService/OpenWalletSession) before it stakes",
                player=player,
            )
        if found.currency != currency:
            raise CurrencyMismatch(
                f"player {player!r}'s wallet session {found.number} is in {found.currency}, the table's stakes are in "
                f"{currency}: launch the game in {currency} and hand pokdeng that session",
                player=player,
                currency=found.currency,
            )
        return found

    def session(self, player: str, number: int) -> PlayerSession:
        """The session ``number`` of ``player`` (0: its newest, for a transaction recorded without one) opened;
        ``WalletSessionMissing`` if there is none, ``VaultError`` if its token cannot be opened."""
        with self._lock:
            known = self._opened.get((player, number))
        if known is not None:
            return known
        book = self._app(player).load_sessions(player)
        found = None if book is None else (book.current if number == 0 else book.sessions.get(number))
        if found is None:
            raise WalletSessionMissing(
                f"player {player!r} has no wallet session {number or ''}".rstrip(), player=player
            )
        opened = PlayerSession(found.token(self._app(player).vault), found.game_code)
        if number:
            with self._lock:
                self._opened[(player, number)] = opened
                while len(self._opened) > KEPT:
                    self._opened.popitem(last=False)
        return opened


__all__ = ["KEPT", "PlayerSession", "SessionBook", "SessionRefused"]
