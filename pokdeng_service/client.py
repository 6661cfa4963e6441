"""The documented client path: ``from pokdeng_service.client import PokdengClient`` (``api.client``)."""

from pokdeng_service.api.client import PokdengClient

__all__ = ["PokdengClient"]
