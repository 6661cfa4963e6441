"""The fault-injection run: a real ``pokdeng serve`` on the platform's wallets, faults between them, SIGKILLs.

The short form runs in CI (``SoakConfig`` defaults: 200 rounds on 4 tables, about 5% of the
wallet calls faulted, 4 SIGKILLs of pokdeng inside a debit or a credit: well under two minutes);
the long form (``python -m pytest --long tests/wallet/test_faults.py``, or the script
``python -m tests.wallet.test_faults --rounds 1000``) plays 1000 rounds on 6 tables with 10 kills.
Both require: no difference between the platform's ledger and pokdeng's record (``reconcile``),
nothing pending, every balance to the minor unit, no credit twice, every void rolled back, no
platform transaction without pokdeng's record, and ``pokdeng verify --all`` passing. The figures
are printed (``pytest -s``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.needs import long_run

from .soak import SoakConfig, SoakReport, run_soak


def _checked(report: SoakReport, config: SoakConfig) -> None:
    print(report.render())
    assert not report.problems, report.render()
    assert not report.differences, report.render()
    assert report.pending == 0, report.render()
    assert report.rounds >= config.rounds, report.render()
    assert report.kills == config.kills, report.render()
    assert report.voided > 0 and report.settled > 0
    faulted = {kind for kind, count in report.faults.items() if count}
    assert faulted >= set(config.rates) | {"kill"}, report.faults


@pytest.mark.soak
def test_the_platform_and_pokdeng_agree_after_faults_and_kills(tmp_path: Path) -> None:
    config = SoakConfig(rounds=1000, tables=6, kills=10, max_seconds=3600) if long_run() else SoakConfig()
    _checked(run_soak(tmp_path, config), config)


@pytest.mark.soak
@pytest.mark.parametrize("wallet", ["remote", "hub88"])
def test_the_faults_with_tls_and_signatures_on(tmp_path: Path, wallet: str) -> None:
    """The same run with the transport's protections on. ``remote``: gRPC with mutual TLS, every request signed and
    checked by the platform (its replay window, replays refused) and every answer signed and verified by pokdeng, on
    protocol version 2 (no transaction of a round after its round_closed one). ``hub88``: ``pokdeng serve --wallet
    hub88`` on the reference Hub88 over HTTPS, RSA signatures both ways, every player's session handed over gRPC
    before play and every transaction sent with its bet's token, also after the SIGKILLs (``soak_hub88``). Nothing
    refused, the same agreement with the platform's ledger."""
    config = SoakConfig(rounds=60, tables=3, kills=2, secure=True, protocol=2, wallet=wallet)
    _checked(run_soak(tmp_path, config), config)


def main(argv: list[str] | None = None) -> int:
    """The long form, outside the suite: ``python -m tests.wallet.test_faults --rounds 1000`` (in it: ``--long``)."""
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="the seamless-wallet fault soak, long form")
    parser.add_argument("--rounds", type=int, default=1000, help="rounds to play (default 1000)")
    parser.add_argument("--tables", type=int, default=6, help="tables played at once (default 6)")
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs of pokdeng between a debit and its record")
    args = parser.parse_args(argv)
    config = SoakConfig(rounds=args.rounds, tables=args.tables, kills=args.kills, max_seconds=3600)
    with tempfile.TemporaryDirectory(prefix="pokdeng-soak-") as folder:
        report = run_soak(Path(folder), config)
        print(report.render())
        _checked(report, config)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
