"""The old client path: the client is the ``pokdeng_client`` package (``from pokdeng_client import PokdengClient``)."""

from pokdeng_client import PokdengClient

__all__ = ["PokdengClient"]
