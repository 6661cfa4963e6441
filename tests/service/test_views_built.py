"""The application's views are built without validation (``model_construct``, queries.py): each one equals
the view pydantic validates from the same values, for every wallet, table and round of a played store,
and a command's result too, field by field and type by type."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from pokdeng_service.application.queries import round_view, table_view, wallet_view
from pokdeng_service.application.views import CommandResult, Reservation, WalletView, built
from pokdeng_service.store import aggregates as ag

from . import play
from .test_fastpaths import Played, play_store
from .test_fastpaths_mapper import same_values


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    folder = tmp_path_factory.mktemp("views")
    app = play.make_app({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(folder / "v.sqlite")})
    try:
        yield play_store(app)
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
    as_constructed(built)


def as_constructed(view: Any) -> None:
    """``views.built`` made what ``model_construct`` makes of the same values, nested views too: the same
    ``__dict__`` (in the same order), fields set, extra and private attributes."""
    if isinstance(view, tuple):
        for item in view:
            as_constructed(item)
        return
    if not isinstance(view, BaseModel):
        return
    constructed = type(view).model_construct(**{name: view.__dict__[name] for name in view.model_fields_set})
    assert list(view.__dict__.items()) == list(constructed.__dict__.items())
    assert view.model_fields_set == constructed.model_fields_set
    assert view.__pydantic_extra__ == constructed.__pydantic_extra__
    assert view.__pydantic_private__ == constructed.__pydantic_private__
    for value in view.__dict__.values():
        as_constructed(value)


def test_built_falls_back_to_model_construct_for_defaults_and_unknown_names() -> None:
    defaulted = built(WalletView, wallet_id="w", balance=1, reserved=0, available=1, reservations=(), version=1)
    assert defaulted.currency == "THB" and defaulted.model_fields_set == set(WalletView.model_fields) - {"currency"}
    renamed = built(Reservation, round_id="r", amount=1, extra=2)  # (ignored, as model_construct ignores it)
    assert renamed == Reservation.model_construct(round_id="r", amount=1)


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
