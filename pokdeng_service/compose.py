"""The composition root: store settings in; applications, turn clocks, read models and a server out.

``Deployment.open(config)`` opens every partition's application (``PartitionedPokdeng``), a
turn clock per partition and the read models of every partition; ``start()`` runs the clocks
and the read models in the background; ``server(address, ...)`` builds the gRPC server over
them; ``close()`` stops everything in the reverse order. The CLI's ``serve`` and ``demo`` and
embedding code use it; nothing else wires the layers together.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from pokdeng_service.api.server import PokdengServer, create_server
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng, PartitionedReadModels
from pokdeng_service.application.turn_clock import TurnClock


@dataclass
class Deployment:
    """One server's worth of pokdeng: the partitions, their clocks and read models."""

    config: StoreConfig
    service: PartitionedPokdeng
    clocks: list[TurnClock] = field(default_factory=list)
    read_models: PartitionedReadModels | None = None

    @classmethod
    def open(cls, config: StoreConfig, *, clocks: bool = True, read_models: bool = True) -> Deployment:
        service = PartitionedPokdeng.open(config)
        deployment = cls(config, service)
        try:
            if clocks:
                deployment.clocks = [TurnClock(app) for app in service.apps]
            if read_models:
                deployment.read_models = PartitionedReadModels(service, config)
        except Exception:
            service.close()
            raise
        return deployment

    def start(self) -> None:
        for clock in self.clocks:
            clock.start()
        if self.read_models is not None:
            self.read_models.run_in_background()

    def server(self, address: str, **options: Any) -> tuple[PokdengServer, int]:
        """A bound, not yet started gRPC server over this deployment (``api.server.create_server``'s options)."""
        return create_server(address, self.target, read_models=self.read_models, **options)

    @property
    def target(self) -> Any:
        """What the server serves: the one application, or the partitioned front."""
        return self.service.apps[0] if len(self.service.apps) == 1 else self.service

    def close(self) -> None:
        if self.read_models is not None:
            with contextlib.suppress(Exception):
                self.read_models.stop()
        for clock in self.clocks:
            with contextlib.suppress(Exception):
                clock.stop()
        self.service.close()
