"""The one wrapper every call passes through: each declared ``Rpc`` made into grpc's method handler.

The server is grpc's threaded server. Its threads are sized so that every admitted unary call and
every stream within its kind's cap has one (``Limits.threads``), and the blocking bodies run at most
``Limits.workers`` at a time. ``wrap`` is the cross-cutting work, done once for every call, in this
order:

1. bytes that are not the method's request message are kept aside (refused in step 4);
2. authentication, once: the bearer token's ``Principal`` is handed to the body, which never
   reads the metadata again (UNAUTHENTICATED); methods declared ``open`` (health, and
   reflection in development mode) take no token;
3. the role check against the method's declared roles (PERMISSION_DENIED);
4. malformed bytes: INVALID_ARGUMENT;
5. the deadline: a call whose deadline has passed is not started (DEADLINE_EXCEEDED), also
   when it passed while the call waited for a worker;
6. the caller's rate (``Runtime.throttle``, ``api/rates.py``): a token of its bucket of the
   method's class (``Rpc.rate_class``: reads, commands, streams opened), else RESOURCE_EXHAUSTED
   at once with RetryInfo (the operator has no bucket);
7. admission (``Runtime``): at most ``Limits.max_concurrent_rpcs`` unary calls in flight, of
   which ``max_calls_per_caller`` for one principal, and per kind of stream at most
   ``Limits.streams(kind)`` open streams, half of them one caller's; at the cap a caller holding
   fewer gets the place of a stream of the caller holding the most (RESOURCE_EXHAUSTED when none
   can be had); a method that needs the store is refused at once while the store probe finds the
   store unreachable (UNAVAILABLE);
8. the body, once a worker is free for its caller (``api/fairness.py``), and for a costly method
   (the audits: ``Rpc.costly``) once one of the few costly slots is free too (a call whose deadline
   passes while it waits is not started);
   any error it raises ends the call through the one error map (``pokdeng_service.api.errors``).
   A stream whose client keeps it waiting longer than ``Limits.stream_idle`` seconds (a reply it
   does not take, a request it does not send) is cancelled by the server's housekeeping thread
   (``Runtime.reap``), and a watch or feed (``Rpc.heartbeat``) that had nothing but heartbeats to
   send for that long is ended (CANCELLED, ``STREAM_IDLE``): a reader that stopped reading is not
   told apart from one that waits, since grpc's transport takes a few megabytes of replies before
   a send waits, so neither holds its place longer than that;
9. the call's outcome (method, code, latency, who, the ids it names) goes to the observer
   (``api/observe.py``: the metrics and the one log line per call).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core.errors import InvalidCommand
from pokdeng_service.api.admission import Runtime, StreamWatch, caller_key
from pokdeng_service.api.auth import Authenticator
from pokdeng_service.api.errors import DeadlineExpired
from pokdeng_service.api.rpcs import Call, Env, Rpc
from pokdeng_service.application.errors import PermissionDenied
from pokdeng_service.application.principal import Principal

# --- the wrapper --------------------------------------------------------------------------------


class _Malformed:
    """What bytes that are not a valid request message deserialise to (refused after authentication)."""


def _tolerant(parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def deserialize(data: bytes) -> Any:
        try:
            return parse(data)
        except Exception:  # DecodeError, UnicodeDecodeError, ...: the bytes are not this message
            return _Malformed()

    return deserialize


def _authenticate(
    rpc: Rpc, authenticator: Authenticator, request: Any, context: grpc.ServicerContext
) -> Principal | None:
    """Steps 2 to 5: the caller (None for an open method), its role, the request's bytes, the deadline."""
    principal = None
    if not rpc.open:
        principal = authenticator.principal(context.invocation_metadata())
        if principal.role not in rpc.roles:
            raise PermissionDenied(
                f"{principal.describe()} may not call {rpc.method}", method=rpc.path, role=principal.role.value
            )
    if isinstance(request, _Malformed):
        raise InvalidCommand("the request is not a valid protobuf message of this method", field="request")
    remaining = context.time_remaining()
    if remaining is not None and remaining <= 0:
        raise DeadlineExpired("the call's deadline passed before it could run")
    return principal


def _call(principal: Principal | None, context: grpc.ServicerContext, watch: StreamWatch | None = None) -> Any:
    return context if principal is None else Call(principal, context, watch)


def _ended(context: grpc.ServicerContext, watch: StreamWatch | None = None) -> tuple[str, str]:
    """The code (and reason) of a call that ended under the wrapper's feet: ended by the server (idle,
    stalled, preempted), gone, or past its deadline."""
    if watch is not None and watch.end is not None:
        return watch.end.code.name, watch.end.reason
    remaining = context.time_remaining()
    return ("DEADLINE_EXCEEDED" if remaining is not None and remaining <= 0 else "CANCELLED"), ""


def _requests(source: Iterator[Any], watch: StreamWatch) -> Iterator[Any]:
    """A client stream's requests, each awaited under the idle limit; malformed bytes refused."""
    while True:
        watch.waiting()
        try:
            request = next(source)
        except StopIteration:
            return
        finally:
            watch.working()
        watch.progress()
        if isinstance(request, _Malformed):
            raise InvalidCommand("the request is not a valid protobuf message of this method", field="request")
        yield request


def _messages(rpc: Rpc) -> tuple[Any, Any]:
    if rpc.request_type is not None and rpc.response_type is not None:
        return rpc.request_type, rpc.response_type
    descriptor = pb.DESCRIPTOR.services_by_name[rpc.service].methods_by_name[rpc.method]
    return getattr(pb, descriptor.input_type.name), getattr(pb, descriptor.output_type.name)


def wrap(rpc: Rpc, env: Env, authenticator: Authenticator, runtime: Runtime) -> grpc.RpcMethodHandler[Any, Any]:
    """The method handler of ``rpc``: every call through authentication, roles, deadline, admission,
    the error map and the observer."""
    request_class, response_class = _messages(rpc)
    deserialize = _tolerant(request_class.FromString)
    serialize = response_class.SerializeToString
    if not rpc.streaming:
        return grpc.unary_unary_rpc_method_handler(_unary(rpc, env, authenticator, runtime), deserialize, serialize)
    run_stream = _streaming(rpc, env, authenticator, runtime)
    if rpc.client_streaming:
        return grpc.stream_stream_rpc_method_handler(run_stream, deserialize, serialize)
    return grpc.unary_stream_rpc_method_handler(run_stream, deserialize, serialize)


def _unary(
    rpc: Rpc, env: Env, authenticator: Authenticator, runtime: Runtime
) -> Callable[[Any, grpc.ServicerContext], Any]:
    """A unary call: steps 2 to 6, then the body admitted (step 7 and 8), its outcome observed."""

    rate_class = rpc.rate_class

    def run(request: Any, context: grpc.ServicerContext) -> Any:
        started = time.perf_counter()
        principal, error, response = None, None, None
        try:
            principal = _authenticate(rpc, authenticator, request, context)
            runtime.throttle(rate_class, principal, context)
            response = _admitted(rpc, env, runtime, principal, request, context)
        except Exception as exc:  # every error is mapped, unknown ones to INTERNAL
            error = exc
        if error is None:
            runtime.done(rpc, principal, request, response, "OK", "", started, context)
            return response
        runtime.fail(rpc, principal, request, error, started, context)

    return run


def _admitted(
    rpc: Rpc, env: Env, runtime: Runtime, principal: Principal | None, request: Any, context: grpc.ServicerContext
) -> Any:
    """A unary call's reply: its body run on the loop (``Rpc.on_loop``), or admitted and run by a worker."""
    call = _call(principal, context)
    if rpc.on_loop:
        return rpc.body(env, call, request)
    key = runtime.admit(principal, context)
    try:
        if rpc.store:
            runtime.require_store()
        return runtime.run(key, context, lambda: rpc.body(env, call, request), costly=rpc.is_costly(request))
    finally:
        runtime.release(key)


@dataclass
class _OpenStream:
    """One streaming call as the wrapper knows it: its kind, its caller and its watch, once it has them."""

    kind: str
    rate_class: str
    principal: Principal | None = None
    watch: StreamWatch | None = None


def _streaming(
    rpc: Rpc, env: Env, authenticator: Authenticator, runtime: Runtime
) -> Callable[[Any, grpc.ServicerContext], Iterator[Any]]:
    """A streaming call: its replies while it is open, its place given back, its outcome observed."""

    kind, rate_class = rpc.stream_kind, rpc.rate_class

    def run_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        started = time.perf_counter()
        stream = _OpenStream(kind, rate_class)
        gone = False
        error: Exception | None = None
        try:
            error = yield from _stream_replies(rpc, env, authenticator, runtime, stream, request, context)
        except GeneratorExit:  # grpc dropped the stream (cancelled, or its send failed): no more replies
            gone = True
        except Exception as exc:  # every error is mapped, unknown ones to INTERNAL
            error = exc
        finally:
            if stream.watch is not None:
                runtime.close_stream(kind, stream.watch)
        _stream_outcome(rpc, runtime, stream, None if rpc.client_streaming else request, gone, error, started, context)

    return run_stream


def _stream_replies(
    rpc: Rpc,
    env: Env,
    authenticator: Authenticator,
    runtime: Runtime,
    stream: _OpenStream,
    request: Any,
    context: grpc.ServicerContext,
) -> Generator[Any, None, Exception | None]:
    """Steps 2 to 8 of a stream: the body's replies, each awaited by the client under the idle limit;
    returns the end the server gave it (idle, or its place given to another), if any."""
    heartbeat = rpc.heartbeat
    stream.principal = _authenticate(rpc, authenticator, None if rpc.client_streaming else request, context)
    runtime.throttle(stream.rate_class, stream.principal, context)
    if rpc.store:
        runtime.require_store()
    key = caller_key(stream.principal, context)
    watch = stream.watch = runtime.open_stream(stream.kind, context, key, quiet=heartbeat is not None)
    source = _requests(request, watch) if rpc.client_streaming else request
    for reply in rpc.body(env, _call(stream.principal, context, watch), source):
        watch.waiting()  # until the client took it
        yield reply
        watch.working()
        if heartbeat is None or not heartbeat(reply):
            watch.progress()
        if watch.end is not None:
            break  # told to end: no more replies
    return watch.end  # the body stopped as told: idle, or its place given to another


def _stream_outcome(
    rpc: Rpc,
    runtime: Runtime,
    stream: _OpenStream,
    logged: Any,
    gone: bool,
    error: Exception | None,
    started: float,
    context: grpc.ServicerContext,
) -> None:
    """Step 9 of a stream: ended under the wrapper's feet, ended well, or failed."""
    principal, watch = stream.principal, stream.watch
    if gone or not context.is_active() or (watch is not None and watch.cancelled):
        code, reason = _ended(context, watch)
        runtime.done(rpc, principal, logged, None, code, reason, started, context)
    elif error is None:
        runtime.done(rpc, principal, logged, None, "OK", "", started, context)
    else:
        runtime.fail(rpc, principal, logged, error, started, context)


def generic_handlers(
    rpcs: Iterable[Rpc], env: Env, authenticator: Authenticator, runtime: Runtime
) -> list[grpc.GenericRpcHandler]:
    """One generic handler per service, with every declared method wrapped."""
    by_service: dict[str, dict[str, grpc.RpcMethodHandler[Any, Any]]] = {}
    for rpc in rpcs:
        by_service.setdefault(rpc.full_service, {})[rpc.method] = wrap(rpc, env, authenticator, runtime)
    return [grpc.method_handlers_generic_handler(name, handlers) for name, handlers in by_service.items()]


__all__ = ["generic_handlers", "wrap"]
