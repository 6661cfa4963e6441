"""The composition root: store settings in; applications, turn clocks, read models and a server out.

``Deployment.open(config)`` locks a SQLite store for this server (``store.lock``: a second
server on the same file is refused), opens every partition's application (``PartitionedPokdeng``), a
turn clock per partition and the read models of every partition; ``start()`` runs the clocks
and the read models in the background (``pokdeng serve``: the read models in a child process of
their own, ``projector``); ``server(address, ...)`` builds the gRPC server over
them; ``close()`` stops everything in the reverse order. The CLI's ``serve`` and ``demo`` and
embedding code use it; nothing else wires the layers together.

While a deployment runs, the metrics endpoint also shows each partition's open rounds and its turn
clock's lag (``pokdeng_open_rounds``, ``pokdeng_turn_clock_lag_seconds``: seconds since the clock's
last tick ended beyond its interval, which grows while a tick runs late or the clock is stuck), how
far each partition's read models are behind its log (``pokdeng_read_models_behind``, notifications)
and how often the read models' child process was started again (the counter
``pokdeng_read_models_restarts_total``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pokdeng_service.api.server import PokdengServer, create_server
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.application.turn_clock import TurnClock
from pokdeng_service.projector import ProjectorProcess
from pokdeng_service.readmodels.partitioned import PartitionedReadModels
from pokdeng_service.store.bounded import StoreProbe, renew_pool
from pokdeng_service.store.lock import StoreLock, acquire_all, release_all
from pokdeng_service.wallet.config import WalletConfig

ReadModelsMode = Literal["thread", "process", "off"]  # where the read models follow the log (``serve --read-models``)


class MeasuredClock(TurnClock):
    """A turn clock whose ticks are timed, for the metrics."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.last_tick = time.monotonic()
        self.tick_seconds = 0.0

    def tick(self) -> list[str]:
        started = time.monotonic()
        try:
            return super().tick()
        finally:
            self.last_tick = time.monotonic()
            self.tick_seconds = self.last_tick - started

    @property
    def lag(self) -> float:
        return max(0.0, time.monotonic() - self.last_tick - self.interval)


class _Running(Collector):
    """The gauges of the deployments running in this process, by partition (summed, or the worst lag)."""

    def __init__(self) -> None:
        self.deployments: list[Deployment] = []
        self.lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        opened = GaugeMetricFamily(
            "pokdeng_open_rounds",
            "Rounds opened and not yet closed, as each turn clock read the log",
            labels=["partition"],
        )
        lag = GaugeMetricFamily(
            "pokdeng_turn_clock_lag_seconds",
            "Seconds since the turn clock's last tick ended, beyond its interval",
            labels=["partition"],
        )
        behind = GaugeMetricFamily(
            "pokdeng_read_models_behind",
            "Notifications in the partition's log that its read models have not taken in yet",
            labels=["partition"],
        )
        restarts = CounterMetricFamily(  # (a count that only grows: exposed as pokdeng_read_models_restarts_total)
            "pokdeng_read_models_restarts",
            "Times the read models' child process was started again after it exited (since the server started)",
        )
        rounds: dict[int, int] = {}
        lags: dict[int, float] = {}
        backlog: dict[int, int] = {}
        again = 0
        with self.lock:
            running = list(self.deployments)
        for deployment in running:
            for k, clock in enumerate(deployment.clocks):
                rounds[k] = rounds.get(k, 0) + len(clock.open_rounds)
                if isinstance(clock, MeasuredClock):
                    lags[k] = max(lags.get(k, 0.0), clock.lag)
            if deployment.read_models is not None:
                pairs = zip(deployment.read_models.models, deployment.service.apps, strict=True)
                for k, (models, app) in enumerate(pairs):
                    try:  # (two small reads; a store that does not answer leaves the gauge out)
                        backlog[k] = max(backlog.get(k, 0), app.max_position - models.position(app.name))
                    except Exception:
                        continue
            if deployment.projector is not None:
                again += deployment.projector.restarts
        for k in sorted(rounds):
            opened.add_metric([str(k)], rounds[k])
        for k in sorted(lags):
            lag.add_metric([str(k)], lags[k])
        for k in sorted(backlog):
            behind.add_metric([str(k)], max(0, backlog[k]))
        restarts.add_metric([], again)
        yield opened
        yield lag
        yield behind
        yield restarts


RUNNING = _Running()
REGISTRY.register(RUNNING)


@dataclass
class Deployment:
    """One server's worth of pokdeng: the partitions, their clocks and read models."""

    config: StoreConfig
    service: PartitionedPokdeng
    clocks: list[TurnClock] = field(default_factory=list)
    read_models: PartitionedReadModels | None = None
    locks: list[StoreLock] = field(default_factory=list)
    recoveries: list[Any] = field(default_factory=list)  # the platform wallet's recovery workers (docs/wallet.md)
    projector: ProjectorProcess | None = None  # the read models' own process (``read_models="process"``)

    @classmethod
    def open(
        cls,
        config: StoreConfig,
        *,
        clocks: bool = True,
        read_models: bool | ReadModelsMode = True,
        lock: bool = True,
        wallet: WalletConfig | None = None,
        log_format: str = "text",
        log_level: str = "INFO",
    ) -> Deployment:
        """Open a server's worth of pokdeng; with ``lock`` (SQLite) each partition's file is locked first
        (``StoreLocked`` if another server holds it) and stays locked until ``close``. ``wallet``: whose
        wallets the rounds book (default the store's; remote: the platform's, with a recovery worker per
        partition). ``read_models``: True or ``"thread"`` follows the log in a thread of this process,
        ``"process"`` in a child process (``projector``, logging in ``log_format`` at ``log_level``), False
        or ``"off"`` not at all; in every case but off the server answers its queries from the views."""
        if read_models not in (True, False, "thread", "process", "off"):
            raise ValueError(f"read_models: {read_models!r} is not thread, process or off")
        locks = []
        if lock and config.kind == "sqlite":
            locks = acquire_all(config.sqlite_file(k) for k in range(config.partitions))
        try:
            service = PartitionedPokdeng.open(config)
        except BaseException:
            release_all(locks)
            raise
        deployment = cls(config, service, locks=locks)
        try:
            if clocks:
                deployment.clocks = [MeasuredClock(app) for app in service.apps]
            if read_models not in (False, "off"):
                deployment.read_models = PartitionedReadModels(service, config)
            if read_models == "process":
                stores = [config.env(k) for k in range(config.partitions)]
                deployment.projector = ProjectorProcess(stores, log_format=log_format, log_level=log_level)
            if wallet is not None and wallet.remote:
                from pokdeng_service.wallet.remote import attach

                deployment.recoveries = attach(service.apps, wallet)
        except Exception:
            service.close()
            release_all(locks)
            raise
        return deployment

    def start(self) -> None:
        with RUNNING.lock:
            RUNNING.deployments.append(self)
        for clock in self.clocks:
            clock.start()
        for recovery in self.recoveries:
            recovery.start()
        if self.projector is not None:
            self.projector.start()
        elif self.read_models is not None:
            self.read_models.run_in_background()

    def server(self, address: str, **options: Any) -> tuple[PokdengServer, int]:
        """A bound, not yet started gRPC server over this deployment (``api.server.create_server``'s options)."""
        probes, recover = self.probes()
        options = {"probes": probes, "recover": recover, **options}
        return create_server(address, self.target, read_models=self.read_models, **options)

    def probes(self) -> tuple[list[Callable[[], None]], Callable[[], None]]:
        """A store probe per partition (``store.bounded.StoreProbe``), and what renews every connection
        pool once the stores answer again: the applications' and the read models'."""
        probes = [StoreProbe(app) for app in self.service.apps]

        def recover() -> None:
            for probe in probes:
                probe.recover()
            if self.read_models is not None:
                for models in self.read_models.models:
                    renew_pool(getattr(models.recorder, "datastore", None))

        return list(probes), recover

    @property
    def target(self) -> Any:
        """What the server serves: the one application, or the partitioned front."""
        return self.service.apps[0] if len(self.service.apps) == 1 else self.service

    def close(self) -> None:
        with RUNNING.lock:
            RUNNING.deployments = [d for d in RUNNING.deployments if d is not self]
        if self.projector is not None:
            with contextlib.suppress(Exception):
                self.projector.stop()
        if self.read_models is not None:
            with contextlib.suppress(Exception):
                self.read_models.stop()
        for clock in self.clocks:
            with contextlib.suppress(Exception):
                clock.stop()
        for recovery in self.recoveries:
            with contextlib.suppress(Exception):
                recovery.stop()
        if self.recoveries:
            from pokdeng_service.wallet.remote import close_platform

            close_platform(self.service.apps)
        try:
            self.service.close()
        finally:
            release_all(self.locks)
