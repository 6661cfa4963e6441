"""The read models of a partitioned deployment: one ``ReadModels`` per partition, queried as one.

``PartitionedReadModels`` routes recall like ``application.partitions.PartitionedPokdeng`` routes commands (a
table's rounds by the table's shard, a player's by its wallet's) and merges the partitions' lists where a
query names neither (``paging``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, Unpack

from pokdeng_core.errors import InvalidCommand
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.readmodels.models import RoundsPage, RoundSummary, TableSummary, WalletBalance
from pokdeng_service.readmodels.paging import (
    RoundFilter,
    RoundFilterArgs,
    check_cursor,
    check_limit,
    merge_by_id,
    merge_rounds,
)
from pokdeng_service.readmodels.runner import ReadModels


class PartitionedReadModels:
    """One ``readmodels.ReadModels`` per partition, each following its own store; recall is
    routed like the commands (a table's rounds by the table's shard, a player's by its
    wallet's). With neither named, every partition's last rounds are merged by closing time.

    The list queries have ``ReadModels``' signatures and answers (``readmodels.paging`` says how
    paging works): ``list_tables``/``list_wallets`` merge every partition by id (the same
    ``after`` pages them); ``page_rounds`` pages rounds with a cursor of one position per
    partition, merged newest first by closing time; ``list_rounds`` takes ``before_position``
    only when its query goes to one partition (a table or a player named, or one partition).
    """

    def __init__(self, service: PartitionedPokdeng, config: StoreConfig) -> None:
        self.service = service
        self.models = [ReadModels(config.env(k)) for k in range(len(service.apps))]

    def run_in_background(self) -> None:
        for models, app in zip(self.models, self.service.apps, strict=True):
            models.run_in_background(app)

    def catch_up(self) -> int:
        return sum(models.catch_up(app) for models, app in zip(self.models, self.service.apps, strict=True))

    def stop(self) -> None:
        for models in self.models:
            with contextlib.suppress(Exception):
                models.stop()

    def last_rounds(self, table_id: str | None = None, player: str | None = None, limit: int = 10) -> Any:
        if table_id is not None:
            return self.models[self.service.partition(table_id, "table")].last_rounds(table_id, player, limit)
        if player is not None:
            return self.models[self.service.partition(player, "wallet")].last_rounds(table_id, player, limit)
        merged = [summary for models in self.models for summary in models.last_rounds(None, None, limit)]
        merged.sort(key=lambda summary: (summary.closed_at, summary.round_id))
        return tuple(merged[-limit:])

    def _home(self, table_id: str | None, player: str | None) -> int | None:
        """The one partition that holds a query's rounds (None: every partition)."""
        if table_id is not None:
            return self.service.partition(table_id, "table")
        if player is not None:
            return self.service.partition(player, "wallet")
        return 0 if len(self.models) == 1 else None

    def list_tables(
        self, after: str | None = None, limit: int = 100, profile: str | None = None
    ) -> tuple[TableSummary, ...]:
        """Every partition's tables by ``table_id`` ascending; next page: ``after`` = the last ``table_id``."""
        runs = [models.list_tables(after, limit, profile) for models in self.models]
        return merge_by_id(runs, lambda table: table.table_id, limit)

    def list_wallets(self, after: str | None = None, limit: int = 100) -> tuple[WalletBalance, ...]:
        """Every partition's wallets by ``wallet_id`` ascending; next page: ``after`` = the last ``wallet_id``."""
        runs = [models.list_wallets(after, limit) for models in self.models]
        return merge_by_id(runs, lambda wallet: wallet.wallet_id, limit)

    def list_rounds(
        self, *, before_position: int | None = None, limit: int = 10, **filters: Unpack[RoundFilterArgs]
    ) -> tuple[RoundSummary, ...]:
        """``ReadModels.list_rounds`` in the partition of the table (or else the player). With neither and
        several partitions: the first page of :meth:`page_rounds`; ``before_position`` is refused there
        (positions of different logs do not compare: page with :meth:`page_rounds`' cursor)."""
        home = self._home(filters.get("table_id"), filters.get("player"))
        if home is not None:
            return self.models[home].list_rounds(before_position=before_position, limit=limit, **filters)
        if before_position is not None:
            raise InvalidCommand(
                "before_position is a position in one partition's log: page every partition's rounds "
                "with a cursor (page_rounds)",
                field="before_position",
            )
        return self.page_rounds(limit=limit, **filters).rounds

    def page_rounds(
        self, *, cursor: Sequence[int] | None = None, limit: int = 10, **filters: Unpack[RoundFilterArgs]
    ) -> RoundsPage:
        """Closed rounds, newest first, ``ReadModels.list_rounds``' filters, and the cursor of the next page.

        ``cursor``: None for the first page, else the previous page's ``next_cursor`` unchanged (one
        log position per partition, so a page token must keep every entry), with the same filters;
        ``next_cursor`` None: no more rounds. A table's or a player's rounds come from its partition
        alone (the other entries stay as they were); otherwise every partition's newest rounds are
        merged by closing time (``closed_at``, then ``round_id``), newest first.
        """
        check_limit(limit)
        query = RoundFilter.of(**filters)
        bounds = check_cursor(cursor, len(self.models))
        home = self._home(filters.get("table_id"), filters.get("player"))
        runs = [
            models.select_rounds(query, bounds[k] or None, limit + 1) if home in (None, k) else ()
            for k, models in enumerate(self.models)
        ]
        return merge_rounds(runs, bounds, limit)


__all__ = ["PartitionedReadModels"]
