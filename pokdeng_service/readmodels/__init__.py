"""Read models: projections of the event log into queryable tables (recent rounds, statements).

May import: ``pokdeng_core``, ``pokdeng_service.store`` and the application's views.
"""

from pokdeng_service.readmodels.models import *  # noqa: F403
from pokdeng_service.readmodels.models import PositionMoved, ReadModels

__all__ = ["PositionMoved", "ReadModels"]
