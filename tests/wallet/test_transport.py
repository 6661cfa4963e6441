"""Authenticated transport to the platform's wallet: gRPC over TLS and mutual TLS, HTTPS, signed requests and answers.

The reference platform requires what a production platform would: a client certificate of its CA
(mutual TLS), and every request signed by an accepted key of pokdeng's within the replay window and
never replayed; it signs its answers, and pokdeng takes an answer as definite only if one of the
platform's configured keys signed it. Keys rotate without a restart on either side; a key file open
to others is refused at the start.
"""

from __future__ import annotations

import os
import random
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pokdeng_service.application import PokdengApp
from pokdeng_service.application.config import ConfigError
from pokdeng_service.cli.main import main
from pokdeng_service.wallet.config import WalletConfig
from pokdeng_service.wallet.outbox import load_transactions
from pokdeng_service.wallet.platform import PlatformWallet, Unanswered
from pokdeng_service.wallet.signing import HEADER, KeyFile, PublicKey, Signer, Verifier, header, key_id

from ..service import play
from .conftest import PLAYERS, Platform
from .pki import Pki, make_pki, public_pem, signing_key, write_private
from .platform_server import Guard, ServerTls, serve_grpc, serve_http

App = Callable[..., PokdengApp]
PATH = "/pokdeng.wallet.v1.PlatformWalletService/Debit"


class Secure:
    """The platform's keys and pokdeng's, as files; a guard accepting pokdeng's key file."""

    def __init__(self, folder: Path, kind: str = "ed25519") -> None:
        self.pki: Pki = make_pki(folder / "pki")
        self.folder = folder
        self.pokdeng_key = signing_key(kind)
        self.sign_key = write_private(folder / "pokdeng-sign.key", self.pokdeng_key)
        self.accepted = folder / "pokdeng-public.pem"  # (the platform's list of pokdeng's keys)
        self.accepted.write_bytes(public_pem(self.pokdeng_key.public_key()))
        self.platform_key = signing_key("ed25519")
        self.platform_keys = folder / "platform-public.pem"  # (pokdeng's list of the platform's keys)
        self.platform_keys.write_bytes(public_pem(self.platform_key.public_key()))
        self.guard = Guard(Verifier(KeyFile(str(self.accepted)), window=30, replays=True), self.platform_key)
        self.tls = ServerTls(self.pki.server_cert, self.pki.server_key, self.pki.ca)

    def config(self, url: str, **changes: str) -> dict[str, str]:
        settings = {
            "tls_ca": str(self.pki.ca), "tls_cert": str(self.pki.client_cert), "tls_key": str(self.pki.client_key),
            "sign_key": str(self.sign_key), "platform_keys": str(self.platform_keys),
        }  # fmt: skip
        if url.startswith(("http://", "grpc://")):
            settings.update(tls_ca="", tls_cert="", tls_key="")
        return {**settings, **changes}

    def wallet(self, url: str, **changes: str) -> PlatformWallet:
        config = WalletConfig("remote", url, timeout=2.0, **self.config(url, **changes))  # type: ignore[arg-type]
        return PlatformWallet.connect(url, timeout=2.0, attempts=2, security=config.security())


@pytest.fixture
def secure(tmp_path: Path) -> Secure:
    return Secure(tmp_path)


@pytest.fixture
def grpcs(platform: Platform, secure: Secure) -> Iterator[str]:
    server, port = serve_grpc(platform.ledger, tls=secure.tls, guard=secure.guard)
    try:
        yield f"grpcs://127.0.0.1:{port}"
    finally:
        server.stop(0).wait(5)


@pytest.fixture
def https(platform: Platform, secure: Secure) -> Iterator[str]:
    server, port = serve_http(platform.ledger, tls=secure.tls, guard=secure.guard)
    try:
        yield f"https://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


def _debit(wallet: PlatformWallet, tx: str, amount: int = 100, player: str = "alice") -> str:
    return wallet.debit(tx, player, "t9#1", "t9", amount, "THB", "bet").status


def test_rounds_play_over_mutual_tls_with_every_call_signed(
    platform: Platform, remote_app: App, secure: Secure, grpcs: str
) -> None:
    platform.fund(*PLAYERS)
    app = remote_app(grpcs, **secure.config(grpcs))
    d = play.Driver(app, chooser=play.Chooser(random.Random(3)))
    play.open_table(d, "t1", "classic", [(i, p) for i, p in enumerate(PLAYERS, 1)])
    round_id = play.start_round(d, "t1")
    play.seat_bets(d, round_id, 200)
    play.drive_round(d, round_id)
    txs = load_transactions(app, round_id)
    assert txs is not None and not txs.pending() and len(txs.txs) == 6
    assert not secure.guard.refused
    assert secure.guard.key_ids == {key_id(secure.pokdeng_key.public_key()): 6}  # (3 debits, 3 credits)


def test_the_platform_refuses_what_is_not_authenticated(platform: Platform, secure: Secure, grpcs: str) -> None:
    platform.fund("alice")
    # no client certificate, or a CA that did not sign the platform's: no connection, nothing applied
    for changes in ({"tls_cert": "", "tls_key": ""}, {"tls_ca": str(secure.pki.other_ca)}):
        wallet = secure.wallet(grpcs, **changes)
        with pytest.raises(Unanswered):
            _debit(wallet, f"t9#1:bet:1:alice:{len(changes)}")
        wallet.close()
    # unsigned, or signed by a key the platform does not accept: UNAUTHENTICATED, nothing applied
    stranger = write_private(secure.folder / "stranger.key", signing_key())
    for changes in ({"sign_key": ""}, {"sign_key": str(stranger)}):
        wallet = secure.wallet(grpcs, **changes)
        with pytest.raises(Unanswered, match="UNAUTHENTICATED"):
            _debit(wallet, "t9#1:bet:1:alice:9")
        wallet.close()
    assert platform.ledger.rows() == [] and platform.ledger.balance_of("alice") == 1_000_000
    assert secure.guard.refused == {"no signature": 2, "key sha256:" + key_id(_public(stranger))[7:]: 2}
    # a platform whose answers are signed by a key pokdeng does not know: no definite answer
    other = secure.folder / "other-platform.pem"
    other.write_bytes(public_pem(signing_key().public_key()))
    wallet = secure.wallet(grpcs, platform_keys=str(other))
    with pytest.raises(Unanswered, match="not signed by its key"):
        _debit(wallet, "t9#1:bet:1:alice:7")
    wallet.close()


def test_https_signed_requests_replays_and_the_window(platform: Platform, secure: Secure, https: str) -> None:
    platform.fund("alice")
    wallet = secure.wallet(https)
    assert _debit(wallet, "t9#1:bet:1:alice:0") == "applied"
    wallet.close()
    # by hand: the same signed request twice (a replay), one signed outside the window, one whose body changed
    body = b'{"txId": "t9#1:bet:1:alice:1", "player": "alice", "roundId": "t9#1", "amount": "5", "currency": "THB"}'
    signed = header(secure.pokdeng_key, "POST", PATH, body)
    five_minutes_ago = int((datetime.now(UTC) - timedelta(minutes=5)).timestamp() * 1000)
    old = header(secure.pokdeng_key, "POST", PATH, body, now_ms=five_minutes_ago)
    context = _client_context(secure)
    assert _post(https + PATH, body, signed, context) == 200
    for value, data in ((signed, body), (old, body), (signed, body.replace(b'"5"', b'"6"'))):
        assert _post(https + PATH, data, value, context) == 401
    assert set(secure.guard.refused) == {"a replay:", "signed at", "the signature"}
    # a client certificate is required over https too
    with pytest.raises(OSError):
        _post(https + PATH, body, header(secure.pokdeng_key, "POST", PATH, body), _client_context(secure, cert=False))


def _public(path: Path) -> PublicKey:
    from pokdeng_service.wallet.signing import load_private

    return load_private(path.read_bytes()).public_key()


def _client_context(secure: Secure, cert: bool = True) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(secure.pki.ca))
    if cert:
        context.load_cert_chain(secure.pki.client_cert, secure.pki.client_key)
    return context


def _post(url: str, body: bytes, signature: str, context: ssl.SSLContext) -> int:
    request = urllib.request.Request(url, data=body, method="POST", headers={HEADER: signature})
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


@pytest.mark.parametrize("kind", ["ed25519", "rsa"])
def test_keys_rotate_without_a_restart(platform: Platform, tmp_path: Path, kind: str) -> None:
    platform.fund("alice")
    secure = Secure(tmp_path, kind)
    server, port = serve_http(platform.ledger, tls=secure.tls, guard=secure.guard)
    url = f"https://127.0.0.1:{port}"
    try:
        wallet = secure.wallet(url)
        assert _debit(wallet, "t9#1:bet:1:alice:0") == "applied"
        first = key_id(secure.pokdeng_key.public_key())
        # pokdeng's key: the platform accepts the old and the new; the new key file replaces the old (mv)
        new = signing_key(kind)
        secure.accepted.write_bytes(public_pem(secure.pokdeng_key.public_key()) + public_pem(new.public_key()))
        write_private(secure.sign_key, new)
        assert _debit(wallet, "t9#1:bet:1:alice:1") == "applied"
        secure.accepted.write_bytes(public_pem(new.public_key()))  # (the old key retired)
        assert _debit(wallet, "t9#1:bet:1:alice:2") == "applied"
        assert secure.guard.key_ids == {first: 1, key_id(new.public_key()): 2}
        # the platform's key: pokdeng's list holds both while the platform switches
        platform_new = signing_key("ed25519")
        both = public_pem(secure.platform_key.public_key()) + public_pem(platform_new.public_key())
        secure.platform_keys.write_bytes(both)
        secure.guard.signer = platform_new
        assert _debit(wallet, "t9#1:bet:1:alice:3") == "applied"
        wallet.close()
    finally:
        server.shutdown()
        server.server_close()


def test_key_files_and_urls_are_checked_at_the_start(secure: Secure, tmp_path: Path) -> None:
    url = "grpcs://127.0.0.1:7443"
    described = WalletConfig("remote", url, **secure.config(url)).describe()  # type: ignore[arg-type]
    assert described.endswith("(mutual TLS, requests signed, answers verified)")
    for name in ("sign_key", "tls_key"):
        loose = tmp_path / f"loose-{name}.key"
        loose.write_bytes(Path(secure.config(url)[name]).read_bytes())
        os.chmod(loose, 0o644)
        with pytest.raises(ConfigError, match="chmod 600"):
            WalletConfig("remote", url, **secure.config(url, **{name: str(loose)}))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="both"):
        WalletConfig("remote", url, tls_cert=str(secure.pki.client_cert))
    with pytest.raises(ConfigError, match="TLS URL"):
        WalletConfig("remote", "grpc://127.0.0.1:7443", tls_ca=str(secure.pki.ca))
    not_key = tmp_path / "not.pem"
    not_key.write_text("hello")
    with pytest.raises(ConfigError, match="no PEM public key"):
        WalletConfig("remote", url, platform_keys=str(not_key))
    assert Signer(str(secure.sign_key)).key_id == key_id(secure.pokdeng_key.public_key())


def test_reconcile_and_serve_speak_grpcs(platform: Platform, secure: Secure, grpcs: str, tmp_path: Path) -> None:
    options = [f"--wallet-{k.replace('_', '-')}={v}" for k, v in secure.config(grpcs).items()]
    store = str(tmp_path / "empty.sqlite")
    play.make_app({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": store}).close()
    assert main(["wallet", "reconcile", "--db", store, "--wallet-url", grpcs, *options]) == 0
    assert main(["wallet", "reconcile", "--db", store, "--wallet-url", grpcs, "--timeout", "1"]) == 4  # (no cert)


def _snippet(opening: str, fence: str) -> str:
    """The code block of docs/wallet.md whose first line is ``opening``."""
    page = (Path(__file__).parents[2] / "docs" / "wallet.md").read_text(encoding="utf-8")
    start = page.index(f"```{fence}\n{opening}") + len(fence) + 4
    return page[start : page.index("```", start)]


def _signed_cases(tmp_path: Path) -> tuple[list[dict[str, str]], list[str]]:
    """Requests signed by pokdeng's ``Signer`` (Ed25519 and RSA) as the platform receives them, and what the check
    must say of each: "" (pokdeng's), or why not."""
    cases, wanted = [], []
    body = b'{"txId": "t1#7:bet:2:alice:0", "player": "alice", "amount": "1500"}'
    for kind in ("ed25519", "rsa"):
        key = signing_key(kind)
        signer = Signer(str(write_private(tmp_path / f"{kind}.key", key)))
        pem = public_pem(key.public_key()).decode()
        signed = signer.sign("POST", PATH, body)
        stale = header(key, "POST", PATH, body, now_ms=1_000)
        for value, data, want in (
            (signed, body, ""),
            (signed, body, "replayed"),
            (signer.sign("POST", PATH, body), body.replace(b"1500", b"1501"), "bad signature"),
            (stale, body, "outside the replay window"),
            (header(signing_key(), "POST", PATH, body), body, "unknown key"),
        ):
            cases.append({"header": value, "body": data.decode(), "pem": pem, "path": PATH})
            wanted.append(want)
    return cases, wanted


def test_the_documented_python_check_accepts_pokdeng_s_signatures(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    namespace: dict[str, object] = {}
    exec(compile(_snippet("# the platform's check of pokdeng's signature (Python)", "python"), "docs", "exec"),
         namespace)  # fmt: skip
    check, key_id_of = namespace["check"], namespace["key_id"]
    cases, wanted = _signed_cases(tmp_path)
    said = []
    for case in cases:
        public = serialization.load_pem_public_key(case["pem"].encode())
        assert key_id_of(public) == key_id(public)  # type: ignore[operator,arg-type]
        said.append(check(case["header"], "POST", case["path"], case["body"].encode(), {key_id(public): public}))  # type: ignore[operator,arg-type]
    assert said == wanted


def test_the_documented_node_check_accepts_pokdeng_s_signatures(tmp_path: Path) -> None:
    import json
    import shutil
    import subprocess

    if shutil.which("node") is None:
        pytest.skip("no node")
    cases, wanted = _signed_cases(tmp_path)
    driver = """
const cases = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(cases.map((c) => {
  const key = crypto.createPublicKey(c.pem);
  return check(c.header, "POST", c.path, Buffer.from(c.body), new Map([[keyId(key), key]]));
})));
"""
    script = _snippet("// the platform's check of pokdeng's signature (Node.js)", "js") + driver
    run = subprocess.run(["node", "-e", script], input=json.dumps(cases), capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == wanted
