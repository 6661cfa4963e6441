"""The defaults of the server's limits, each declared once (docs/operations.md, "Settings" and "Sizing and limits").

``api.server.create_server`` (and ``serve``) takes them as its keyword defaults, ``cli.settings.ServeSettings``
as its fields' defaults, and ``cli.serve_flags`` formats them into ``pokdeng serve --help``;
``tests/cli/test_limits_declared_once.py`` checks that the three (and the operations guide's table) agree.
Constants only: importing this module loads nothing else, so the flags' help (built without pydantic or grpc)
reads it too.
"""

WORKERS = 16
"""``pokdeng serve --workers``: threads running the calls' blocking work."""
SERVER_WORKERS = 8
"""``create_server``'s ``max_workers`` when not given (an embedded server, the tests): fewer than the command's."""
CALLS_A_WORKER = 8
"""Unary calls in flight a worker, when ``--max-concurrent-rpcs`` is not given."""
MIN_WATCHES = 4
"""WatchTable and WatchRound streams when ``--max-watches`` is not given: the workers, at least this many."""
HEALTH_WATCHES = 32
"""``--max-health-watches``: health Watch streams at once."""
REFLECTION_STREAMS = 8
"""``--max-reflection-streams``: reflection streams at once."""
COSTLY_WORKERS = 1
"""``--costly-workers``: audits (replay, verify, export, proofs) running at once."""
STREAM_IDLE = 60.0
"""``--stream-idle``: seconds a stream may wait on its client, or have nothing but heartbeats to send."""
CONNECTION_IDLE = 300.0
"""``--connection-idle``: seconds before a connection with no call is closed."""
PROBE_INTERVAL = 1.0
"""``--probe-interval``: seconds between store probes."""
POLL_INTERVAL = 0.2
"""Seconds between a feed's polls of the store (``create_server``'s ``poll_interval``; no flag)."""
HEARTBEAT = 15.0
"""Seconds between a quiet watch's or feed's heartbeats (``create_server``'s ``heartbeat``; no flag)."""
METRICS_THREADS = 4
"""``--metrics-threads``: metrics connections served at once (more: 503)."""
METRICS_TIMEOUT = 5.0
"""``--metrics-timeout``: seconds a metrics connection may stay open."""
SHUTDOWN_GRACE = 10.0
"""``--shutdown-grace``: seconds calls in flight get on SIGTERM (``serve``'s ``grace``)."""
LOG_REFUSALS_PER_SECOND = 5.0
"""``--log-refusals-per-second``: log lines a second of the calls a peer host makes without a valid token."""

# each caller's rates by class of methods (``api.rates.DEFAULT_RATES``): calls a second (0: no limit), and at
# once. Far above what a person at a table sends (a command or two a turn, a few reads an event, a watch a
# round), and about what a client playing one table as fast as the server answers sends; a flood of a
# thousand calls a second is held to these.
RATE_READS = 100.0
"""``--rate-reads``: unary reads a second, per caller."""
RATE_READS_BURST = 200
"""``--rate-reads-burst``: unary reads a caller may send at once."""
RATE_COMMANDS = 50.0
"""``--rate-commands``: commands a second, per caller."""
RATE_COMMANDS_BURST = 100
"""``--rate-commands-burst``: commands a caller may send at once."""
RATE_STREAMS = 10.0
"""``--rate-streams``: streams opened a second, per caller."""
RATE_STREAMS_BURST = 40
"""``--rate-streams-burst``: streams a caller may open at once."""
