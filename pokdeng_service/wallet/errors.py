"""The refusals of a stake the platform's wallet did not take: ``WalletRefused`` is mapped to FAILED_PRECONDITION
by the API, ``WalletUnavailable`` (no answer, try again) to UNAVAILABLE; and ``WalletAdapterMismatch``
(FAILED_PRECONDITION): a round's money booked through the adapter that does not hold its stakes."""

from __future__ import annotations

from pokdeng_core.errors import DomainError


class WalletRefused(DomainError):
    """The platform refused a stake's debit for a reason other than funds (a reused tx id, a limit)."""

    code = "wallet_refused"


class WalletUnavailable(DomainError):
    """The platform's wallet did not answer in time; a stake's debit is rolled back (retry the command)."""

    code = "wallet_unavailable"


class WalletAdapterMismatch(DomainError):
    """The round's stakes are held by the other wallet adapter than the one this server books (a round whose
    debits are the platform's on a server of the internal wallets, docs/wallet.md "Switching adapters"):
    FAILED_PRECONDITION, reason ``WALLET_ADAPTER_MISMATCH``, metadata ``round_id``, ``adapter`` and ``held_by`` (or
    ``wallet``: a store wallet that holds no reservation of the round it would settle)."""

    code = "wallet_adapter_mismatch"
