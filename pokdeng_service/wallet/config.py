"""Which wallets a deployment uses (``pokdeng serve --wallet internal|remote``, docs/wallet.md).

* ``internal`` (the default): the event-sourced wallets of the store; a wallet lives in one
  partition (its id's shard), and so does every round it plays.
* ``remote``: the platform keeps the balances; pokdeng calls its ``PlatformWalletService``
  (``proto/pokdeng/wallet/v1/wallet.proto``) at ``url``: ``host:port`` or ``grpc://host:port`` for
  gRPC, ``http(s)://host:port[/base]`` for JSON over HTTP (any other URL is refused at the start:
  ``platform.url_problem``). Each transaction is in its round's currency (the table's). ``timeout``
  bounds one call, ``attempts`` the calls of one transaction within a command (the recovery goes on
  after that); ``grace`` is how old a debit left open by another process must be before the recovery
  rolls it back (default: ``attempts * (timeout + 0.2) + 1`` seconds, longer than any command waits
  on its debit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pokdeng_service.application.config import ConfigError

WalletKind = Literal["internal", "remote"]


@dataclass(frozen=True)
class WalletConfig:
    kind: WalletKind = "internal"
    url: str = ""
    timeout: float = 2.0
    attempts: int = 3
    recovery_interval: float = 0.5
    grace: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("internal", "remote"):
            raise ConfigError(f"wallet is internal or remote, not {self.kind!r}")
        if self.kind == "remote" and not self.url:
            raise ConfigError("a remote wallet needs the platform's URL (--wallet-url host:port or http://...)")
        if self.kind == "remote":
            from pokdeng_service.wallet.platform import url_problem

            problem = url_problem(self.url)
            if problem:
                raise ConfigError(f"--wallet-url: {problem}")
        if not 0 < self.timeout <= 60:
            raise ConfigError("the wallet timeout is 0 to 60 seconds")
        if not 1 <= self.attempts <= 20:
            raise ConfigError("the wallet attempts are 1 to 20")

    @property
    def remote(self) -> bool:
        return self.kind == "remote"

    @property
    def debit_grace(self) -> float:
        """Seconds after which an open debit of another process is taken as abandoned."""
        if self.grace is not None:
            return self.grace
        return self.attempts * (self.timeout + 0.2) + 1.0

    def describe(self) -> str:
        return "internal wallets" if not self.remote else f"the platform's wallets at {self.url}"
