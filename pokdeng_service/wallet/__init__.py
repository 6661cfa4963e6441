"""The wallet port: where a round's money lives (docs/wallet.md).

* ``port``: the ``WalletPort`` the round handlers book money through, and ``InternalPort``, the
  event-sourced wallets of ``store.aggregates.Wallet`` (reservations, settlement, releases);
* ``outbox``: ``WalletTransactions``, a round's transactions with a platform's wallet, requested
  before each call and recorded with the round's events (hash-chained);
* ``platform``: the client of the platform's wallet (``pokdeng.wallet.v1``, over gRPC or JSON over
  HTTP), each call retried with its transaction id until a definite answer;
* ``remote``: ``RemotePort``, the seamless wallet: debit before a bet is placed, credit at the
  settlement, rollback on a void;
* ``recovery``: the worker that finishes every pending transaction (also after a crash);
* ``reconcile``: both sides of a period compared; ``verify``: the outbox streams in
  ``pokdeng verify --all``; ``config``: the deployment's choice of adapter;
* ``v1``: the generated code of ``proto/pokdeng/wallet/v1/wallet.proto``.

May import: core, store, application (the pipeline and commands). The application reaches the port
only through ``port.port_of`` (an attribute of the application, the internal port by default).
"""
