"""pokdeng.wallet.v2: generated from proto/pokdeng/wallet/v2/wallet.proto by ``python -m pokdeng_service.api.generate``.

Do not edit ``wallet_pb2*`` by hand: change the .proto file and regenerate.
"""
