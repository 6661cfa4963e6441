"""The harness's platform, at a room whose banker cannot cover the next round when it opens.

The start is refused ``BANKER_CANNOT_COVER`` (the role ended instead): the driver holds the banker
bid and sends the very same start again (its request id was not used), with nothing unexpected.
"""

from __future__ import annotations

from pathlib import Path

from pokdeng_testkit.harness.client import HarnessClient
from pokdeng_testkit.harness.driver import TableDriver, TableSpec
from pokdeng_testkit.harness.server import ServerProcess, Store
from pokdeng_testkit.harness.tokens import Tokens


def test_the_driver_holds_a_bid_when_a_room_start_ends_the_banker_s_role(tmp_path: Path) -> None:
    spec = TableSpec("room-d", "room", ("ann", "ben", "cat"))
    tokens = Tokens.for_players(list(spec.wallets))
    tokens_file = tokens.write(tmp_path / "tokens.json")
    server = ServerProcess(Store.sqlite(tmp_path / "d.sqlite"), tokens_file, tmp_path / "server.log")
    server.start()
    try:
        driver = TableDriver(spec, HarnessClient(server.target, patience=30.0), tokens, wallet_every=0)
        driver.setup(funds=100_000)
        first = driver.next_round()  # the bid first (ann), then the start
        assert first == "room-d#1"
        driver.play_round(first)
        banker = driver.table().banker
        available = driver.ops.send("WalletService", "GetWallet", wallet_id=banker).wallet.available
        driver.ops.send("WalletService", "Withdraw", request_id="drain", wallet_id=banker, amount=available - 1_999)
        assert driver.next_round() is None  # refused: the role ended instead (two seated need 2000)
        assert driver.refused["StartRound"] == 1 and not driver.unexpected
        assert not driver.table().banker
        second = driver.next_round()  # a bid, then the same start, request id "room-d#2:start"
        assert second == "room-d#2" and "room-d#2:start" in driver.acked
        closed = driver.play_round(second)
        assert closed is not None and not driver.unexpected
    finally:
        server.stop()
