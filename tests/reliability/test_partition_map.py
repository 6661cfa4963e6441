"""The partition map: each partition may name its own PostgreSQL URL (``--partition-url K=URL``,
``POKDENG_PARTITION_URLS``), validated at start; the store commands work with it, one store per partition.

The settings and their checks need no database. The last test puts two partitions in two databases and
runs the store commands over the map: ``verify --all`` (flags and environment), ``recall``, ``backup``
(one dump per database) and ``restore`` (into two new databases, which verify again). Partitions on two
separate clusters, under load and with replicas, are ``test_replica_processes.py``.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from pokdeng_service.application.config import ConfigError, StoreConfig, parse_partition_urls, postgres_settings
from pokdeng_service.application.partitions import PartitionedPokdeng, partition_of
from pokdeng_service.cli import EXIT_OK, EXIT_USAGE, main
from pokdeng_service.cli.main import build_parser
from pokdeng_service.cli.settings import ServeSettings
from pokdeng_service.store.bounded import BoundedPostgresFactory
from pokdeng_service.store.readonly import ReadOnlyPostgresFactory
from pokdeng_testkit.pgserver import PostgresServerInfo
from tests.needs import unavailable

from ..service import play

A = "postgresql://pokdeng:secret-a@db-a.example:5432/pokdeng"
B = "postgresql://pokdeng:secret-b@db-b.example:6432/pokdeng"
C = "postgresql://pokdeng:secret-c@db-c.example:5432/games"


pytestmark = pytest.mark.usefixtures("no_store_settings")  # (tests/conftest.py)


def _place(config: StoreConfig, k: int) -> tuple[str, str, str, str]:
    env = config.env(k)
    return env["POSTGRES_HOST"], env["POSTGRES_PORT"], env["POSTGRES_DBNAME"], env.get("POSTGRES_SCHEMA", "")


def test_each_partition_gets_its_own_url_and_keeps_its_schema() -> None:
    config = StoreConfig.from_args(partition_urls=[f"0={A}", f"1={B}", f"2={C}?schema=lobby2"])
    assert config.partitions == 3 and config.kind == "postgres"
    assert _place(config, 0) == ("db-a.example", "5432", "pokdeng", "")  # partition 0: public
    assert _place(config, 1) == ("db-b.example", "6432", "pokdeng", "pokdeng_p1")  # as with one URL
    assert _place(config, 2) == ("db-c.example", "5432", "games", "lobby2")  # the URL's own schema
    assert config.env(1)["POSTGRES_PASSWORD"] == "secret-b"
    described = config.describe()
    assert "db-b.example:6432/pokdeng (schema pokdeng_p1)" in described and "secret" not in described
    # one dump per database: pokdeng backup/restore
    assert [(k, schemas) for k, _env, schemas in config.postgres_stores()] == [
        (0, []),
        (1, ["pokdeng_p1"]),
        (2, ["lobby2"]),
    ]


def test_one_url_for_every_partition_is_the_layout_of_postgres_url() -> None:
    mapped = StoreConfig.from_args(partition_urls=json.dumps({"0": A, "1": A}))
    assert mapped == StoreConfig.from_args(postgres_url=A, partitions=2)
    shared = StoreConfig.from_args(partition_urls=[f"0={A}", f"1={A}", f"2={B}"])  # two on A, one on B
    assert [_place(shared, k) for k in range(3)] == [
        ("db-a.example", "5432", "pokdeng", ""),
        ("db-a.example", "5432", "pokdeng", "pokdeng_p1"),
        ("db-b.example", "6432", "pokdeng", "pokdeng_p2"),
    ]
    assert [(k, schemas) for k, _env, schemas in shared.postgres_stores()] == [(0, []), (2, ["pokdeng_p2"])]


@pytest.mark.parametrize(
    ("given", "partitions", "message"),
    [
        ([f"0={A}", f"0={B}"], 1, "names partition 0 twice"),
        (json.dumps({"0": A, "1": B}).replace('"1"', '"0"'), 1, "names partition 0 twice"),
        ([f"1={B}"], 1, "gives partition 0 no URL"),
        ([f"0={A}", f"2={B}"], 1, "gives partition 1 no URL"),
        ([f"0={A}", f"1={B}"], 3, "gives partition 2 no URL"),
        ([f"0={A}", f"1={B}", f"2={C}"], 2, "names partition 2, the deployment has 2"),
        ([A], 1, "is K=URL"),
        (["x=" + A], 1, "partitions are numbered"),
        (["0="], 1, "gives partition 0 no URL"),
        ('{"0": 5}', 1, "must map partition numbers to URLs"),
        ("{nope", 1, "not valid JSON"),
        ([f"0={A}?schema=s", f"1={B}", f"2={A}?schema=s"], 1, "partitions 0 and 2 would share one store"),
        ([f"0={A}", "1=mysql://db/x"], 1, "not a PostgreSQL URL"),
        ([f"0={A}", f"1={B}?target_session_attrs=sometimes"], 1, "target_session_attrs must be one of"),
    ],
)
def test_a_bad_map_is_refused_at_start(given: str | list[str], partitions: int, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as refused:
        StoreConfig.from_args(partition_urls=given, partitions=partitions)
    assert "secret" not in str(refused.value)


def test_a_map_and_one_url_are_refused_together(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="not both"):
        StoreConfig.from_args(postgres_url=A, partition_urls=[f"0={A}", f"1={B}"])
    monkeypatch.setenv("POKDENG_POSTGRES_URL", A)
    with pytest.raises(ConfigError, match="not both"):
        StoreConfig.from_args(partition_urls=[f"0={A}", f"1={B}"])


def test_the_forms_of_the_map() -> None:
    expected = {0: A, 1: B}
    assert parse_partition_urls(f"0={A}\n 1={B} ") == expected  # an environment file's K=URL items
    assert parse_partition_urls(json.dumps({"1": B, "0": A})) == expected
    assert parse_partition_urls(json.dumps([A, B])) == expected
    assert parse_partition_urls([f"0={A}", f"1={B}"]) == expected  # --partition-url, repeated
    assert parse_partition_urls("") == parse_partition_urls(None) == {}


def test_serve_takes_the_map_from_flags_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = build_parser()
    args = parser.parse_args(["serve", "--partition-url", f"0={A}", "--partition-url", f"1={B}"])
    flagged = ServeSettings.from_args(args).store_config()
    assert flagged.partition_urls == (A, B) and flagged.partitions == 2
    monkeypatch.setenv("POKDENG_PARTITION_URLS", json.dumps({"0": A, "1": C}))
    from_env = ServeSettings.from_args(parser.parse_args(["serve"])).store_config()
    assert from_env.partition_urls == (A, C)
    assert ServeSettings.from_args(args).store_config().partition_urls == (A, B)  # a flag wins over the environment
    # every store command reads the map too (`pokdeng verify --all`, backup, ...): here the environment's
    verify = parser.parse_args(["verify", "--all"])
    assert StoreConfig.from_args(partition_urls=verify.partition_url).partition_urls == (A, C)


def test_a_store_command_refuses_a_bad_map(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["serve", "--partition-url", f"0={A}", "--partition-url", f"0={B}"])
    with pytest.raises(ConfigError, match="names partition 0 twice"):
        ServeSettings.from_args(args).store_config()  # (what `pokdeng serve` does first: exit 2)
    assert main(["verify", "--all", "--partition-url", f"1={A}"]) == EXIT_USAGE
    assert "gives partition 0 no URL" in capsys.readouterr().err


def test_a_multi_host_url_reaches_every_session() -> None:
    """libpq's multi-host URL (a primary and its standby): host and port lists, and target_session_attrs on every
    session of the pool, the probe's and (as "primary": they are read-only sessions) the audit tools'."""
    url = "postgresql://pokdeng:pw@10.0.0.1:5432,10.0.0.2:5433/pokdeng?target_session_attrs=read-write"
    env = postgres_settings(url)
    assert (env["POSTGRES_HOST"], env["POSTGRES_PORT"]) == ("10.0.0.1,10.0.0.2", "5432,5433")
    assert env["POSTGRES_TARGET_SESSION_ATTRS"] == "read-write"
    pool = BoundedPostgresFactory(env).datastore.pool.kwargs  # (the pool is not opened: nothing connects)
    assert isinstance(pool, dict)
    assert (pool["host"], pool["port"], pool["target_session_attrs"]) == (
        "10.0.0.1,10.0.0.2",
        "5432,5433",
        "read-write",
    )
    audit = ReadOnlyPostgresFactory({**env, "CREATE_TABLE": "n"}).datastore.pool.kwargs
    assert isinstance(audit, dict) and audit["target_session_attrs"] == "primary"
    assert "10.0.0.1:5432,10.0.0.2:5433/pokdeng" in StoreConfig(kind="postgres", postgres_url=url).describe()


# --- two databases, the store commands over the map ------------------------------------------------------


def _shard(partition: int) -> str:
    return next(f"lobby{i}" for i in range(1000) if partition_of(f"lobby{i}/t", 2) == partition)


def _tables(info: PostgresServerInfo) -> set[tuple[str, str]]:
    with psycopg.connect(**info.connect_kwargs(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables WHERE table_name = 'pokdeng_events'"
        ).fetchall()
    return {(str(schema), str(name)) for schema, name in rows}


def _tally(out: str) -> int:
    tally = [line for line in out.splitlines() if re.fullmatch(r"\d+ passed, \d+ failed", line)]
    assert len(tally) == 1 and tally[0].endswith(" passed, 0 failed"), out
    return int(tally[0].split()[0])


@pytest.mark.postgres
def test_store_commands_over_a_partition_map(
    make_postgres_database: Callable[[], PostgresServerInfo],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = make_postgres_database(), make_postgres_database()
    if first.schema:  # only on an outside server (POKDENG_TEST_POSTGRES_URL); CI starts its own cluster
        unavailable("the session isolates tests by schema on this server: a partition map needs databases")
    mapped = [f"--partition-url=0={first.url}", f"--partition-url=1={second.url}"]
    config = dataclasses.replace(
        StoreConfig.from_args(partition_urls=[f"0={first.url}", f"1={second.url}"]), vault_key=play.VAULT_KEY
    )
    service = PartitionedPokdeng.open(config)
    closed: dict[int, list[str]] = {}
    try:
        for k in (0, 1):
            shard = _shard(k)
            d = play.Driver(service.apps[k], prefix=f"map{k}", chooser=play.Chooser(random.Random(k)))
            players = [f"{shard}/ann", f"{shard}/ben"]
            play.open_wallets(d, players)
            play.open_table(d, f"{shard}/km", "kingmaker", [(1, players[0]), (2, players[1])])
            closed[k] = []
            for _ in range(2 + k):
                round_id = play.start_round(d, f"{shard}/km", "map")
                play.seat_bets(d, round_id, 200)
                play.drive_round(d, round_id)
                closed[k].append(round_id)
            assert service.app_for(f"{shard}/km") is service.apps[k]
    finally:
        service.close()
    # each partition's events in its own database: partition 1 in its schema there, nothing of it in the first
    assert _tables(first) == {("public", "pokdeng_events")}
    assert _tables(second) == {("pokdeng_p1", "pokdeng_events")}

    assert main(["verify", "--all", "--quiet", *mapped]) == EXIT_OK
    assert _tally(capsys.readouterr().out) == 5
    monkeypatch.setenv("POKDENG_PARTITION_URLS", json.dumps({"0": first.url, "1": second.url}))
    assert main(["verify", "--all", "--quiet"]) == EXIT_OK  # the map from the environment
    assert _tally(capsys.readouterr().out) == 5
    assert main(["recall", "--table", f"{_shard(1)}/km"]) == EXIT_OK
    assert "3 round(s), oldest first" in capsys.readouterr().out
    monkeypatch.delenv("POKDENG_PARTITION_URLS")

    dump = tmp_path / "pokdeng.dump"
    assert main(["backup", *mapped, str(dump)]) == EXIT_OK  # one dump per database: OUT and OUT.p1
    assert dump.exists() and (tmp_path / "pokdeng.p1.dump").exists()
    capsys.readouterr()
    third, fourth = make_postgres_database(), make_postgres_database()
    restored = [f"--partition-url=0={third.url}", f"--partition-url=1={fourth.url}"]
    assert main(["restore", str(dump), *restored]) == EXIT_OK
    assert main(["verify", "--all", "--quiet", *restored]) == EXIT_OK
    assert _tally(capsys.readouterr().out) == 5
    assert _tables(fourth) == {("pokdeng_p1", "pokdeng_events")}
