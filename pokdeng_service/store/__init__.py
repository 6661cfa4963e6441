"""The stored model: aggregates and their events on the ``eventsourcing`` library.

Holds the aggregates (``aggregates``), the plain-value codec and canonical JSON (``codec``),
the one record type of a stored event (``facts``), the seed vault (``vault``), the Merkle
tree (``merkle``) and the library fast paths (``fastpaths``).

May import: ``pokdeng_core`` and the libraries. Never the application, audit, read models,
API or CLI.
"""
