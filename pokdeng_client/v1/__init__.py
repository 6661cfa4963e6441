"""pokdeng.v1: generated from proto/pokdeng/v1/pokdeng.proto by ``python -m pokdeng_service.api.generate``.

Do not edit ``pokdeng_pb2*`` by hand: change the .proto file and regenerate.
"""
