"""A bundle restates what its events say (payouts, settlement, decisions, seeds, profile, times, chain
ends): an offline verification computes each again from the events and refuses a bundle whose copy
differs, even with its bundle digest recomputed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest

from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.store.codec import canonical_json

from . import play


def _redigest(bundle: dict[str, Any]) -> bytes:
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    bundle["bundle_digest"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    return audit.bundle_bytes(bundle)


EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "a payout": lambda b: b["payouts"][0].update(net=b["payouts"][0]["net"] + 100),
    "the settlement": lambda b: b["settlement"].update(house_net=b["settlement"]["house_net"] + 1),
    "a decision": lambda b: b["decisions"].pop(),
    "the profile": lambda b: b["profile"].update(version=b["profile"]["version"] + 1),
    "the engine": lambda b: b.update(engine_version="0.0.1"),
    "the table": lambda b: b.update(table_id="elsewhere"),
    "the times": lambda b: b["times"].update(closed="2020-01-01T00:00:00+00:00"),
    "the genesis": lambda b: b["chain"].update(genesis="00" * 32),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_restated_field_that_differs_from_the_events_fails(app: PokdengApp, driver: play.Driver, edit: str) -> None:
    play.open_wallets(driver, ["a", "b"])
    play.open_table(driver, "t", "classic", [(1, "a"), (2, "b")])
    round_id = play.start_round(driver, "t")
    play.seat_bets(driver, round_id, 100)
    play.drive_round(driver, round_id)
    bundle = audit.export_bundle(app, round_id)
    assert audit.verify_bundle(audit.bundle_bytes(bundle)).ok
    forged = json.loads(audit.bundle_bytes(bundle))  # a file: its copies are its own (no shared objects)
    EDITS[edit](forged)
    verdict = audit.verify_bundle(_redigest(forged))
    assert not verdict.ok and verdict.first_difference.startswith("copies"), verdict.render()


@pytest.mark.parametrize("app_env", ["sqlite"], indirect=True)  # (it edits the SQLite file)
def test_a_round_whose_rows_were_swapped_under_a_running_server_is_not_exported(
    app: PokdengApp, driver: play.Driver, app_env: dict[str, str]
) -> None:
    """Found from the outside: with two events of a closed round swapped in the store while the server ran (its
    cached round unchanged), ExportRound failed with INTERNAL ("does not start a command"). The events an
    export reads afresh must chain: else the stream is refused (``StreamForged``: DATA_LOSS), as a load is."""
    import sqlite3

    from pokdeng_service.application.errors import StreamForged
    from pokdeng_service.store.aggregates import round_uuid

    play.open_wallets(driver, ["a", "b"])
    play.open_table(driver, "t", "classic", [(1, "a"), (2, "b")])
    round_id = play.start_round(driver, "t")
    play.seat_bets(driver, round_id, 100)
    play.drive_round(driver, round_id)
    assert audit.export_bundle(app, round_id)["round_id"] == round_id  # (the round is cached, closed)
    with sqlite3.connect(app_env["SQLITE_DBNAME"]) as conn:
        where = "FROM stored_events WHERE originator_id = ? AND originator_version = ?"
        uuid = round_uuid(round_id).hex
        (t5, s5), (t6, s6) = (conn.execute(f"SELECT topic, state {where}", (uuid, v)).fetchone() for v in (5, 6))
        update = "UPDATE stored_events SET topic = ?, state = ? WHERE originator_id = ? AND originator_version = ?"
        conn.execute(update, (t6, s6, uuid, 5))
        conn.execute(update, (t5, s5, uuid, 6))
    with pytest.raises(StreamForged, match="does not continue the hash chain"):
        audit.export_bundle(app, round_id)
    assert not audit.verify_round(app, round_id, check_wallets=True).ok  # (the audit reports it, as before)


@pytest.mark.parametrize("app_env", ["sqlite"], indirect=True)  # (it edits the SQLite file)
def test_a_round_its_table_does_not_pin_is_not_exported(
    app: PokdengApp, driver: play.Driver, app_env: dict[str, str]
) -> None:
    """A bundle is evidence of a round its table played: the table's ``round_finished`` must pin the round's last
    digest (found from the outside: a closed round copied under another id, its chain recomputed, was exported)."""
    import sqlite3

    from pokdeng_service.application.errors import StreamForged
    from pokdeng_service.store.aggregates import table_uuid

    play.open_wallets(driver, ["a", "b"])
    play.open_table(driver, "t", "classic", [(1, "a"), (2, "b")])
    round_id = play.start_round(driver, "t")
    play.seat_bets(driver, round_id, 100)
    play.drive_round(driver, round_id)
    assert audit.export_bundle(app, round_id)["round_id"] == round_id
    with sqlite3.connect(app_env["SQLITE_DBNAME"]) as conn:
        uuid = table_uuid("t").hex
        rows = conn.execute("SELECT originator_version, state FROM stored_events WHERE originator_id = ?", (uuid,))
        for version, state in rows.fetchall():
            data = json.loads(state)
            if data.get("kind") == "round_finished":
                data["data"]["round_digest"] = "0" * 64
                update = "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?"
                conn.execute(update, (json.dumps(data).encode(), uuid, version))
    with pytest.raises(StreamForged, match="pins another last digest"):
        audit.export_bundle(app, round_id)
