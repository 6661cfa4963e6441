"""Opening a round (``OpenRound``): its ids, stake limits, seats, banker and committed shuffle checked
against the profile, then the opening's events (``RoundOpened``, ``ShuffleCommitted``, and in a round with
contributions ``ContributionsOpened`` and the platform's seed).
"""

from __future__ import annotations

from . import commands as c
from . import events as e
from .errors import InvalidCommand
from .limits import MAX_CLIENT_SEED, check_id, client_seed_problem, id_problem
from .profiles import ENGINE_VERSION, BankerKind
from .round_deciding import RoundRun, require_phase
from .round_state import Phase
from .shuffle import CLIENT_SEED_RULE, PLATFORM, SHUFFLE_ALGORITHM

_HEX = frozenset("0123456789abcdef")


def open_round(run: RoundRun, cmd: c.OpenRound) -> None:
    """Open the round: every field checked, in this order, then the opening's events."""
    require_phase(run.state, Phase.NEW, doing="open the round")
    _check_ids(cmd)
    _check_stake_limits(cmd)
    _check_seats(cmd)
    _check_banker(cmd)
    _check_shuffle(cmd)
    _emit_opening(run, cmd)


def _check_ids(cmd: c.OpenRound) -> None:
    """The round's and the table's ids, and a round number from 1."""
    for name, value in (("round_id", cmd.round_id), ("table_id", cmd.table_id)):
        problem = id_problem(value, name)
        if problem is not None:  # both ids name the round: the field is its id either way
            raise InvalidCommand(problem, field="round_id")
    if cmd.round_no < 1:
        raise InvalidCommand("round numbers start at 1", field="round_no")


def _check_stake_limits(cmd: c.OpenRound) -> None:
    """0 < min_stake <= max_stake, both even where the wager is split (ante)."""
    if not 0 < cmd.min_stake <= cmd.max_stake:
        raise InvalidCommand("stake limits must satisfy 0 < min_stake <= max_stake", field="min_stake")
    if cmd.profile.wager_split and (cmd.min_stake % 2 or cmd.max_stake % 2):  # (as the table's: table.py)
        field = "min_stake" if cmd.min_stake % 2 else "max_stake"
        raise InvalidCommand(f"ante wagers are split in two: {field} must be even", field=field)


def _check_seats(cmd: c.OpenRound) -> None:
    """Distinct seat numbers from 1: the profile's betting positions, or seats held by players."""
    numbers = [seat for seat, _ in cmd.seats]
    if len(set(numbers)) != len(numbers) or any(n < 1 for n in numbers):
        raise InvalidCommand("seat numbers must be distinct and start at 1", field="seats")
    if cmd.profile.fixed_positions is not None:
        _check_positions(cmd, numbers)
    else:
        _check_seated_players(cmd, numbers)


def _check_positions(cmd: c.OpenRound, numbers: list[int]) -> None:
    """A profile of betting positions (ante): every position from 1, none held."""
    profile = cmd.profile
    assert profile.fixed_positions is not None
    if sorted(numbers) != list(range(1, profile.fixed_positions + 1)) or any(h for _, h in cmd.seats):
        raise InvalidCommand(f"{profile.name} has betting positions 1 to {profile.fixed_positions}", field="seats")


def _check_seated_players(cmd: c.OpenRound, numbers: list[int]) -> None:
    """One to ``max_hands`` seats, each with a holder of a valid id, none holding more than its share."""
    profile = cmd.profile
    if not cmd.seats:
        raise InvalidCommand("a round needs at least one seated player", field="seats")
    if len(numbers) > profile.max_hands:
        raise InvalidCommand(f"{profile.name} allows at most {profile.max_hands} hands", field="seats")
    if any(not h for _, h in cmd.seats):
        raise InvalidCommand("every seat needs a holder", field="seats")
    for seat, h in cmd.seats:
        problem = id_problem(h, "a seat holder's player id")
        if problem is not None:
            raise InvalidCommand(f"seat {seat}: {problem}", field="seats")
    held: dict[str | None, int] = {}
    for _, h in cmd.seats:
        held[h] = held.get(h, 0) + 1
    if max(held.values()) > profile.seats_per_player:
        raise InvalidCommand(
            f"in {profile.name} a player holds at most {profile.seats_per_player} seat(s)", field="seats"
        )


def _check_banker(cmd: c.OpenRound) -> None:
    """The house banks where the profile lets it; a player-banker has a valid id and holds no seat."""
    profile = cmd.profile
    if cmd.banker_player is None and BankerKind.HOUSE not in profile.banker:
        raise InvalidCommand(f"{profile.name} needs a player as banker", field="banker_player")
    if cmd.banker_player is not None:
        check_id(cmd.banker_player, "banker_player")
        if BankerKind.PLAYER not in profile.banker:
            raise InvalidCommand(f"in {profile.name} the house is the banker", field="banker_player")
        if any(h == cmd.banker_player for _, h in cmd.seats):
            raise InvalidCommand("the banker cannot also hold a player's seat", field="banker_player")


def _check_shuffle(cmd: c.OpenRound) -> None:
    """The committed shuffle: a SHA-256 commitment, the client seed and its rule, the nonce, the algorithm."""
    if len(cmd.commitment) != 64 or not _HEX.issuperset(cmd.commitment):
        raise InvalidCommand("the commitment must be a SHA-256 in lowercase hex", field="commitment")
    if len(cmd.client_seed) > MAX_CLIENT_SEED:
        raise InvalidCommand(f"a client seed has at most {MAX_CLIENT_SEED} characters", field="client_seed")
    if cmd.client_seed_rule not in ("", CLIENT_SEED_RULE):
        raise InvalidCommand(f"unsupported client seed rule {cmd.client_seed_rule!r}", field="client_seed_rule")
    if cmd.client_seed_rule:
        problem = client_seed_problem(cmd.client_seed, required=False)
        if problem is not None:
            raise InvalidCommand(problem, field="client_seed")
    if not 0 <= cmd.nonce < 2**64:
        raise InvalidCommand("the nonce must be a 64-bit unsigned integer", field="nonce")
    if cmd.algorithm != SHUFFLE_ALGORITHM:
        raise InvalidCommand(f"unsupported shuffle algorithm {cmd.algorithm!r}", field="algorithm")


def _emit_opening(run: RoundRun, cmd: c.OpenRound) -> None:
    """``RoundOpened`` and the committed shuffle; with contributions, their opening and the platform's seed."""
    profile = cmd.profile
    run.emit(
        e.RoundOpened(
            cmd.round_id,
            cmd.table_id,
            cmd.round_no,
            profile.name,
            profile.version,
            tuple(sorted(profile.options.items())),
            ENGINE_VERSION,
            cmd.banker_player,
            tuple(sorted(cmd.seats)),
            cmd.min_stake,
            cmd.max_stake,
            cmd.currency,
            cmd.by,
        )
    )
    if not cmd.client_seed_rule:  # the client seed is given now (engines before 1.1.0)
        run.emit(e.ShuffleCommitted(cmd.commitment, cmd.client_seed, cmd.nonce, cmd.algorithm, profile.shoe_size))
        return
    run.emit(e.ContributionsOpened(cmd.client_seed_rule))
    run.emit(e.ShuffleCommitted(cmd.commitment, "", cmd.nonce, cmd.algorithm, profile.shoe_size))
    if cmd.client_seed:  # the platform's contribution, after the commitment
        run.emit(e.ClientSeedContributed(PLATFORM, cmd.client_seed))
