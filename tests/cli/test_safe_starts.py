"""Safe starts of ``pokdeng serve``: an explicit vault key on PostgreSQL, one server per SQLite file
(an OS lock beside it), key files private to their owner, new keys made with mode 0600.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pokdeng_service.application.config import ConfigError, StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_UNAVAILABLE, EXIT_USAGE, main
from pokdeng_service.compose import Deployment
from pokdeng_service.store.lock import StoreLocked, lock_path
from pokdeng_service.store.vault import VaultError
from pokdeng_testkit.harness.server import ROOT, ServerProcess, Store, child_env
from pokdeng_testkit.harness.tokens import Tokens
from pokdeng_testkit.keys import VAULT_KEY
from pokdeng_testkit.ports import free_port

from .stores import snapshot

UNREACHABLE = "postgresql://pokdeng:pokdeng@127.0.0.1:9/pokdeng"  # never connected to: refused before


pytestmark = pytest.mark.usefixtures("no_store_settings")  # (tests/conftest.py)


def test_serve_on_postgres_needs_an_explicit_vault_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--postgres-url", UNREACHABLE, "--port", "0"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "needs an explicit vault key" in err and "POKDENG_VAULT_KEY" in err and "--vault-key-file" in err
    missing = tmp_path / "keys" / "vault.key"
    assert main(["serve", "--postgres-url", UNREACHABLE, "--vault-key-file", str(missing), "--port", "0"]) == 2
    assert f"vault key file {missing} not found" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="explicit vault key"):
        StoreConfig(kind="postgres", postgres_url=UNREACHABLE).vault()
    monkeypatch.setenv("POKDENG_VAULT_KEY_FILE", str(missing))
    assert main(["serve", "--postgres-url", UNREACHABLE, "--port", "0"]) == EXIT_USAGE
    assert snapshot(tmp_path) == {}  # no ./pokdeng.vault-key, no key file made for the name given


def test_a_key_file_open_to_others_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "pokdeng.sqlite"
    key = db.with_name(db.name + ".vault-key")
    key.write_text("ab" * 32 + "\n")
    for mode in (0o644, 0o640, 0o604, 0o660):
        key.chmod(mode)
        assert main(["serve", "--db", str(db), "--port", "0"]) == EXIT_USAGE
        err = capsys.readouterr().err
        assert f"vault key file {key} is open to its group or others (mode {mode:03o})" in err
        assert f"chmod 600 {key}" in err
    named = tmp_path / "named.key"
    named.write_text("cd" * 32 + "\n")
    named.chmod(0o644)
    with pytest.raises(VaultError, match="chmod 600"):
        StoreConfig(kind="postgres", postgres_url=UNREACHABLE, vault_key_file=str(named)).vault()
    assert not db.exists()  # refused before the store was opened
    key.chmod(0o600)  # fixed as told: the store opens (and the refused starts left no lock behind)
    deployment = Deployment.open(StoreConfig.from_args(db=str(db)), clocks=False, read_models=False)
    deployment.close()


def test_a_new_key_file_is_made_with_mode_0600(tmp_path: Path) -> None:
    old = os.umask(0)  # not the umask's doing
    try:
        service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(tmp_path / "s" / "pokdeng.sqlite")))
        service.close()
    finally:
        os.umask(old)
    key = tmp_path / "s" / "pokdeng.sqlite.vault-key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert len(bytes.fromhex(key.read_text().strip())) == 32


def test_one_deployment_per_sqlite_file(tmp_path: Path) -> None:
    config = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "pokdeng.sqlite"), partitions=2, vault_key=VAULT_KEY)
    first = Deployment.open(config, clocks=False, read_models=False)
    try:
        with pytest.raises(StoreLocked, match=rf"pid {os.getpid()} on .*: pokdeng serve"):
            Deployment.open(config, clocks=False, read_models=False)
        # another partition layout over the same files is refused too (partition 1's file is locked)
        other = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "pokdeng.p1.sqlite"), vault_key=VAULT_KEY)
        with pytest.raises(StoreLocked):
            Deployment.open(other, clocks=False, read_models=False)
        # applications are not servers: tests and tools may open the file as before
        PartitionedPokdeng.open(config).close()
    finally:
        first.close()
    Deployment.open(config, clocks=False, read_models=False).close()  # released on close
    assert lock_path(tmp_path / "pokdeng.sqlite").exists()  # the lock file stays; only the lock goes


def test_a_second_server_on_one_sqlite_file_refuses_to_start(tmp_path: Path) -> None:
    db = tmp_path / "pokdeng.sqlite"
    tokens = Tokens().write(tmp_path / "tokens.json")
    server = ServerProcess(Store.sqlite(db), tokens, tmp_path / "server.log")
    try:
        server.start()
        assert server.proc is not None
        second = subprocess.run(
            [sys.executable, "-m", "pokdeng_service.cli", "serve", "--db", str(db), "--port", str(free_port())],
            cwd=ROOT,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode == EXIT_UNAVAILABLE, second.stderr
        assert f"SQLite file {db} is in use by another pokdeng process (pid {server.proc.pid} on " in second.stderr
        assert "Traceback" not in second.stderr
        server.kill()  # SIGKILL: the operating system releases the lock
        server.start()  # and a server starts again on the file
    finally:
        server.close()
