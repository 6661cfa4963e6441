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

The transport's protection (docs/wallet.md, "Authenticated transport"): ``grpcs://`` and ``https://``
are TLS, the platform's certificate verified by ``tls_ca`` (else the system's trust store); with
``tls_cert`` and ``tls_key`` pokdeng shows its client certificate (mutual TLS; the key a secret file);
``sign_key`` (a secret file, Ed25519 or RSA PEM) signs every request; ``platform_keys`` (a file of PEM
public keys) verifies the platform's signed answers, ``signature_window`` seconds either side of now.
Every file is read at the start (a missing, unreadable or open-to-others file: ``ConfigError``, exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pokdeng_service.application.config import ConfigError

WalletKind = Literal["internal", "remote", "hub88"]


@dataclass(frozen=True)
class WalletConfig:
    kind: WalletKind = "internal"
    url: str = ""
    timeout: float = 2.0
    attempts: int = 3
    recovery_interval: float = 0.5
    grace: float | None = None
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    sign_key: str = ""
    platform_keys: str = ""
    signature_window: float = 60.0
    protocol: int = 1  # pokdeng.wallet.v1, or v2 (docs/wallet.md, "Protocol version 2")
    game_code: str = "pokdeng"
    provider_id: str = "pokdeng"
    hub88_key: str = ""  # --wallet hub88: pokdeng's RSA private key signing every request (a secret file)
    hub88_public_keys: str = ""  # Hub88's public keys (PEM): its answers verified

    def __post_init__(self) -> None:
        if self.kind not in ("internal", "remote", "hub88"):
            raise ConfigError(f"wallet is internal, remote or hub88, not {self.kind!r}")
        if self.kind == "hub88":
            self._check_hub88()
        elif self.kind == "remote" and not self.url:
            raise ConfigError("a remote wallet needs the platform's URL (--wallet-url host:port or http://...)")
        if self.kind == "remote":
            from pokdeng_service.wallet.platform import url_problem

            problem = url_problem(self.url)
            if problem:
                raise ConfigError(f"--wallet-url: {problem}")
        if self.kind == "remote":
            self._check_security()
        if not 0 < self.timeout <= 60:
            raise ConfigError("the wallet timeout is 0 to 60 seconds")
        if not 1 <= self.attempts <= 20:
            raise ConfigError("the wallet attempts are 1 to 20")

    def _check_hub88(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"--wallet hub88 needs Hub88's wallet API URL (--wallet-url https://...): {self.url!r}")
        if not self.hub88_key:
            raise ConfigError("--wallet hub88 needs pokdeng's RSA private key (--wallet-hub88-key, chmod 600)")
        if self.tls_cert or self.tls_key or self.sign_key or self.platform_keys:
            raise ConfigError(
                "--wallet hub88 signs with --wallet-hub88-key and verifies with --wallet-hub88-public-keys, not the "
                "--wallet-tls-cert/-key, --wallet-sign-key, --wallet-platform-keys of pokdeng's protocol"
            )
        if self.tls_ca and not self.tls:
            raise ConfigError(f"--wallet-tls-ca is for an https:// URL, not {self.url}")
        if not self.game_code:
            raise ConfigError("the wallet's game code is not empty")
        try:
            self.platform().close()
        except (OSError, ValueError) as error:  # (SecretFileError, SignatureError: ValueErrors)
            raise ConfigError(f"the Hub88 wallet's keys: {error}") from None

    def platform(self) -> Any:
        """The platform's wallet client (``platform.PlatformWallet``): pokdeng's protocol, or Hub88's API (spoken as
        protocol 2 by ``hub88.Hub88Transport``); every key file read now."""
        from pokdeng_service.wallet.platform import PlatformWallet

        if self.kind == "hub88":
            from pokdeng_service.wallet.hub88 import Hub88Transport

            transport = Hub88Transport(self.url, self.hub88_key, self.hub88_public_keys, self.tls_ca)
            return PlatformWallet(transport, self.timeout, self.attempts, protocol=2, game_code=self.game_code)
        return PlatformWallet.connect(
            self.url, self.timeout, self.attempts, self.security(), self.protocol, self.game_code, self.provider_id
        )

    @property
    def tls(self) -> bool:
        return self.url.startswith(("grpcs://", "https://"))

    def _check_security(self) -> None:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ConfigError("mutual TLS needs both --wallet-tls-cert and --wallet-tls-key")
        if (self.tls_ca or self.tls_cert) and not self.tls:
            raise ConfigError(
                f"--wallet-tls-ca and --wallet-tls-cert are for a TLS URL (grpcs://host:port, https://...), "
                f"not {self.url}"
            )
        if self.protocol not in (1, 2):
            raise ConfigError(f"the wallet protocol is version 1 or 2, not {self.protocol}")
        if not self.game_code or not self.provider_id:
            raise ConfigError("the wallet's game code and provider id are not empty")
        if not 1 <= self.signature_window <= 3600:
            raise ConfigError("the wallet's signature window is 1 to 3600 seconds")
        try:
            self.security()
        except (OSError, ValueError) as error:  # (SecretFileError, SignatureError: ValueErrors)
            raise ConfigError(f"the platform wallet's keys: {error}") from None

    def security(self) -> Any:
        """The transport's protection (``platform.Security``), every file read now."""
        from pathlib import Path

        from pokdeng_service.store.secret_files import read_secret
        from pokdeng_service.wallet.platform import Security
        from pokdeng_service.wallet.signing import KeyFile, Signer, Verifier

        for name, path in (("--wallet-tls-ca", self.tls_ca), ("--wallet-tls-cert", self.tls_cert)):
            if path and b"-----BEGIN CERTIFICATE-----" not in Path(path).read_bytes():
                raise ValueError(f"{name} {path} holds no PEM certificate")
        if self.tls_key:
            read_secret(self.tls_key, "wallet TLS client key")
        signer = Signer(self.sign_key) if self.sign_key else None
        answers = Verifier(KeyFile(self.platform_keys), self.signature_window) if self.platform_keys else None
        return Security(self.tls_ca, self.tls_cert, self.tls_key, signer, answers)

    @property
    def remote(self) -> bool:
        """The platform keeps the balances (``remote`` or ``hub88``)."""
        return self.kind in ("remote", "hub88")

    @property
    def debit_grace(self) -> float:
        """Seconds after which an open debit of another process is taken as abandoned."""
        if self.grace is not None:
            return self.grace
        return self.attempts * (self.timeout + 0.2) + 1.0

    def describe(self) -> str:
        if not self.remote:
            return "internal wallets"
        if self.kind == "hub88":
            checked = ", Hub88's answers verified" if self.hub88_public_keys else ""
            return f"Hub88's wallet API at {self.url} (requests signed{checked}, game {self.game_code})"
        protection = ["mutual TLS" if self.tls_cert else "TLS"] if self.tls else []
        protection += ["requests signed"] if self.sign_key else []
        protection += ["answers verified"] if self.platform_keys else []
        protection += [f"protocol v2, game {self.game_code}, provider {self.provider_id}"] if self.protocol == 2 else []
        return f"the platform's wallets at {self.url}" + (f" ({', '.join(protection)})" if protection else "")
