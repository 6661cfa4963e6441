"""The platform's wallet: the seamless adapter of the application's wallet port (docs/wallet.md).

* ``outbox``: ``WalletTransactions``, a round's transactions with a platform's wallet, requested
  before each call and recorded with the round's events (hash-chained);
* ``platform``: the client of the platform's wallet (``pokdeng.wallet.v1``, over gRPC or JSON over
  HTTP), each call retried with its transaction id until a definite answer;
* ``remote``: ``RemotePort``, the seamless wallet: debit before a bet is placed, credit at the
  settlement, rollback on a void;
* ``stakes``: the step the one pipeline runs before a stake: its debits requested, sent, and given back
  if the stake is not recorded;
* ``recovery``: the worker that finishes every pending transaction (also after a crash); ``owed``: the
  money owed to players (a credit or rollback refused, a credit long unanswered) as metrics;
* ``reconcile``: both sides of a period compared; ``config``: the deployment's choice of adapter;
  ``switch``: the checks before a server changes adapter (the outbox's verification is
  ``pokdeng_service.audit.outbox``);
* ``v1``: the generated code of ``proto/pokdeng/wallet/v1/wallet.proto``.

May import: core, store and the application (whose ``wallet_port`` declares the port this package's
``RemotePort`` implements, and whose pipeline runs its stake step). The application never imports this
package: a deployment attaches the remote port (``remote.attach``).
"""
