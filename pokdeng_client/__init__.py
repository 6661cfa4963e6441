"""pokdeng_client: the Python client of the pokdeng gRPC API (package ``pokdeng.v1``).

    from pokdeng_client import PokdengClient

    with PokdengClient("127.0.0.1:50051", token="...") as pokdeng:
        pokdeng.call("WalletService", "OpenWallet", wallet_id="ann", currency_code="THB")

* ``pokdeng_client.v1``: the generated messages and stubs (``pokdeng_pb2``, ``pokdeng_pb2_grpc``);
* ``pokdeng_client.client``: ``PokdengClient``, calls with request ids and safe retries;
* ``pokdeng_client.events``: a typed event's stored ``data`` (``data_of``), to check chain digests;
* ``pokdeng_client.chain``: the audit chain link of a ``RecordedEvent`` (docs/api.md, docs/audit.md);
* ``pokdeng.proto``: the API's .proto file (``importlib.resources.files("pokdeng_client") / "pokdeng.proto"``).

It depends on grpcio, protobuf and rfc8785 only (never on the server package).
"""

from pokdeng_client.client import PokdengClient

__all__ = ["PokdengClient"]
