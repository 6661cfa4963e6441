"""The application's views are built without validation (``model_construct``, queries.py): each one equals
the view pydantic validates from the same values, for every wallet, table and round of a played store,
and a command's result too, field by field and type by type."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from pokdeng_service.application.queries import round_view, table_view, wallet_view
from pokdeng_service.application.views import CommandResult
from pokdeng_service.store import aggregates as ag

from . import play
from .test_fastpaths import Played, _play
from .test_fastpaths_mapper import same_values


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    folder = tmp_path_factory.mktemp("views")
    app = play.make_app({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(folder / "v.sqlite")})
    try:
        yield _play(app)
    finally:
        app.close()


def validated(value: Any) -> Any:
    """The same view, every model in it (nested ones first) built by pydantic's validation."""
    if isinstance(value, BaseModel):
        fields = {name: validated(getattr(value, name)) for name in type(value).model_fields}
        return type(value)(**fields)
    if isinstance(value, tuple) and any(isinstance(v, BaseModel) for v in value):
        return tuple(validated(v) for v in value)
    return value


def same_view(built: BaseModel) -> None:
    checked = validated(built)
    assert built == checked
    assert built.model_dump() == checked.model_dump()
    assert built.model_dump_json() == checked.model_dump_json()
    same_values(_plain(built), _plain(checked), type(built).__name__)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return {name: _plain(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def test_views_are_the_validated_ones(played: Played) -> None:
    app = played.app
    for wallet_id in played.wallets:
        same_view(wallet_view(app.load_wallet(wallet_id)))
    for table_id in played.tables:
        same_view(table_view(app.load_table(table_id)))
    for round_id in [*played.rounds, played.open_round]:
        record = app.load_round(round_id, with_shoe=False)
        same_view(round_view(record))
        same_view(round_view(record, app.view_events(ag.round_uuid(round_id), record.version)))


def test_command_results_are_the_validated_ones(played: Played) -> None:
    app = played.app
    wallet = played.wallets[0]
    for result in (
        app.deposit("views-deposit", wallet, 5),
        app.deposit("views-deposit", wallet, 5),  # replayed: no view
        app.take_seat("views-seat", "classic-t", "views-player", 4),
    ):
        assert isinstance(result, CommandResult)
        same_view(result)
