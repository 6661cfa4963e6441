#!/usr/bin/env node
// A pokdeng client in another language: Node.js with @grpc/grpc-js and @grpc/proto-loader.
//
// It loads the API's .proto at run time (no generated code), connects to a running server and
// plays one whole round of every profile (classic, ante, room, kingmaker) through the API alone:
// the operator runs the tables, each player acts with its own token, the room's player-banker
// plays the banker's hand with its own token. Every command is sent twice with the same
// request_id (the retry must answer the same and be flagged as replayed); the first bet of each
// round is sent once more after the round closed (it must answer the events it first recorded,
// with the round as it is now, and write nothing).
// Each closed round must balance, verify (VerifyRound), export (ExportRound), and its events must
// arrive typed (GetRound FULL and a WatchRound stream).
//
// Usage:
//   node play.js ADDRESS --proto FILE --operator TOKEN --player NAME=TOKEN... [--prefix P]
//                [--profiles classic,ante,room,kingmaker]
//
// Prints one JSON line per profile on stdout; exits 1 (with the reasons on stderr) when any
// profile failed, 2 on bad usage. tests/api/test_node_client.py runs it against a real server.
'use strict';

const crypto = require('node:crypto');
const util = require('node:util');

const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROFILES = ['classic', 'ante', 'room', 'kingmaker'];
const DEADLINE_MS = 30000;
const MAX_STEPS = 200;

class Failure extends Error {}

function fail(message) {
  throw new Failure(message);
}

function check(condition, message) {
  if (!condition) fail(typeof message === 'function' ? message() : message);
}

// --- command line ------------------------------------------------------------------------------

function usage(message) {
  process.stderr.write(
    `play.js: ${message}\n` +
      'usage: node play.js ADDRESS --proto FILE --operator TOKEN --player NAME=TOKEN... ' +
      '[--prefix P] [--profiles classic,ante,room,kingmaker]\n',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const options = { address: null, proto: null, operator: null, players: {}, prefix: 'node', profiles: PROFILES };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${arg} needs a value`);
      i += 1;
      return argv[i];
    };
    if (arg === '--proto') options.proto = value();
    else if (arg === '--operator') options.operator = value();
    else if (arg === '--prefix') options.prefix = value();
    else if (arg === '--profiles') options.profiles = value().split(',').filter(Boolean);
    else if (arg === '--player') {
      const entry = value();
      const at = entry.indexOf('=');
      if (at <= 0) usage(`--player takes NAME=TOKEN, not ${JSON.stringify(entry)}`);
      options.players[entry.slice(0, at)] = entry.slice(at + 1);
    } else if (arg.startsWith('--')) usage(`unknown option ${arg}`);
    else if (options.address === null) options.address = arg;
    else usage(`unexpected argument ${JSON.stringify(arg)}`);
  }
  if (!options.address) usage('the server address (host:port) is missing');
  if (!options.proto) usage('--proto FILE is missing');
  if (!options.operator) usage('--operator TOKEN is missing');
  for (const name of options.profiles) if (!PROFILES.includes(name)) usage(`unknown profile ${name}`);
  return options;
}

// --- the API -----------------------------------------------------------------------------------

function loadApi(protoFile) {
  const definition = protoLoader.loadSync(protoFile, {
    keepCase: true, // field names as in the .proto: bet_settled, round_id
    longs: String, // int64 as decimal strings (exact); compared and summed as BigInt
    enums: String, // enum values by name: ROUND_PHASE_CLOSED, COMMAND_KIND_DRAW
    defaults: true,
    oneofs: true, // RecordedEvent.event names the set member
  });
  const loaded = grpc.loadPackageDefinition(definition);
  const v1 = loaded.pokdeng && loaded.pokdeng.v1;
  check(v1, `${protoFile} has no package pokdeng.v1`);
  for (const service of ['WalletService', 'TableService', 'RoundService', 'AuditService', 'EventService']) {
    check(typeof v1[service] === 'function', `${protoFile} has no service pokdeng.v1.${service}`);
  }
  return v1;
}

class Client {
  constructor(v1, address, tokens, prefix) {
    this.channel = new grpc.Channel(address, grpc.credentials.createInsecure(), {});
    this.stubs = {};
    for (const service of ['WalletService', 'TableService', 'RoundService', 'AuditService']) {
      this.stubs[service] = new v1[service](address, grpc.credentials.createInsecure(), {
        channelOverride: this.channel,
      });
    }
    this.tokens = tokens;
    this.prefix = prefix;
    this.counter = 0;
    this.retries = 0;
  }

  close() {
    for (const stub of Object.values(this.stubs)) stub.close();
    this.channel.close();
  }

  metadata(who) {
    const token = this.tokens[who];
    check(token, `no token for ${who}: pass --player ${who}=TOKEN`);
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${token}`);
    return metadata;
  }

  // One unary call: resolves to { response, trailers } once both the answer and the status are in.
  unary(service, method, request, who) {
    const stub = this.stubs[service];
    check(stub && typeof stub[method] === 'function', `${service} has no method ${method}`);
    return new Promise((resolve, reject) => {
      let answer = null;
      let status = null;
      const finish = () => {
        if (answer === null || status === null) return;
        if (answer.error) {
          const error = answer.error;
          const name = grpc.status[error.code] || String(error.code);
          reject(new Failure(`${service}.${method} as ${who} failed: ${name}: ${error.details || error.message}`));
        } else {
          resolve({ response: answer.response, trailers: status.metadata });
        }
      };
      const call = stub[method](
        request,
        this.metadata(who),
        { deadline: Date.now() + DEADLINE_MS },
        (error, response) => {
          answer = { error, response };
          finish();
        },
      );
      call.on('status', (received) => {
        status = received;
        finish();
      });
    });
  }

  async get(service, method, request, who = 'operator') {
    return (await this.unary(service, method, request, who)).response;
  }

  // A command: a fresh request_id, then the same request again, which must answer the same.
  async cmd(service, method, fields, who = 'operator') {
    this.counter += 1;
    const request = { request_id: `${this.prefix}-${who}-${this.counter}`, ...fields };
    const first = await this.unary(service, method, request, who);
    const replayed = first.trailers.get('pokdeng-replayed');
    check(
      replayed.length === 1 && replayed[0] === 'false',
      () => `${method}: a first call's trailer pokdeng-replayed is ${JSON.stringify(replayed)}, not "false"`,
    );
    const again = await this.unary(service, method, request, who);
    check(
      util.isDeepStrictEqual(again.response, first.response),
      () => `${method}: a retry with request_id ${request.request_id} answered differently`,
    );
    const flagged = again.trailers.get('pokdeng-replayed');
    check(
      flagged.length === 1 && flagged[0] === 'true',
      () => `${method}: a retry's trailer pokdeng-replayed is ${JSON.stringify(flagged)}, not "true"`,
    );
    this.retries += 1;
    return { request, response: first.response };
  }

  // Replay an earlier command later: the same request_id and the events the first call recorded
  // (the proto: "on a retry: those the first call recorded"); the reply's round is the round "as
  // it is now", so it is compared with a fresh read, which must show that nothing was written.
  async late(service, method, sent, who, now) {
    const again = await this.unary(service, method, sent.request, who);
    const { response } = again;
    check(response.request_id === sent.response.request_id, `${method}: a late retry answered another request_id`);
    check(
      util.isDeepStrictEqual(response.events, sent.response.events),
      () => `${method}: a late retry of ${sent.request.request_id} answered other events than the first call: ` +
        `${JSON.stringify(diff(sent.response.events, response.events))}`,
    );
    const flagged = again.trailers.get('pokdeng-replayed');
    check(flagged[0] === 'true', `${method}: a late retry was not flagged as replayed`);
    if (now !== undefined) {
      check(
        util.isDeepStrictEqual(response.round, now),
        () => `${method}: a late retry's round is not the round as it is now: ${JSON.stringify(diff(now, response.round))}`,
      );
    }
    this.retries += 1;
  }

  async round(roundId, view = 'ROUND_VIEW_BASIC', who = 'operator') {
    return (await this.get('RoundService', 'GetRound', { round_id: roundId, view }, who)).round;
  }

  async wallet(walletId) {
    return (await this.get('WalletService', 'GetWallet', { wallet_id: walletId })).wallet;
  }

  // The kinds legal now for `who` (asking for `seat`; null: the operator's own commands).
  async legal(roundId, seat, who) {
    const request = { round_id: roundId };
    if (seat !== null) request.seat = seat;
    const response = await this.get('RoundService', 'GetLegalCommands', request, who);
    const commands = {};
    for (const command of response.commands) {
      check(
        typeof command.kind === 'string' && command.kind.startsWith('COMMAND_KIND_'),
        () => `GetLegalCommands answered a command kind ${JSON.stringify(command.kind)}`,
      );
      commands[command.kind] = command;
    }
    return commands;
  }

  watch(roundId, who = 'operator') {
    const stub = this.stubs.RoundService;
    return new Promise((resolve, reject) => {
      const events = [];
      const call = stub.WatchRound({ round_id: roundId }, this.metadata(who), {
        deadline: Date.now() + DEADLINE_MS,
      });
      call.on('data', (message) => {
        if (message.event) events.push(message.event);
      });
      call.on('error', (error) =>
        reject(new Failure(`RoundService.WatchRound failed: ${grpc.status[error.code]}: ${error.details}`)),
      );
      call.on('end', () => resolve(events));
    });
  }
}

function diff(a, b, path = '') {
  if (util.isDeepStrictEqual(a, b)) return [];
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Buffer.isBuffer(a)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].flatMap((k) => diff(a[k], b[k], `${path}.${k}`));
  }
  return [`${path}: ${JSON.stringify(a)} -> ${JSON.stringify(b)}`];
}

// --- the game ----------------------------------------------------------------------------------

function points(cards) {
  let total = 0;
  for (const card of cards) {
    const rank = card.slice(0, -1);
    if (rank === 'A') total += 1;
    else if (/^[2-9]$/.test(rank)) total += Number(rank);
  }
  return total % 10;
}

const big = (value) => BigInt(value);
const plain = (value) => {
  const n = BigInt(value);
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : String(n);
};

async function balances(api, names) {
  const result = {};
  for (const name of names) result[name] = big((await api.wallet(name)).balance);
  return result;
}

async function openTable(api, tableId, profile, fields) {
  const { response } = await api.cmd('TableService', 'OpenTable', {
    table_id: tableId,
    profile,
    min_stake: 100,
    max_stake: 1000,
    seats: 6,
    turn_timeout: { seconds: 30, nanos: 0 },
    currency_code: 'THB',
    ...fields,
  });
  const table = response.table;
  check(table.profile === profile, `OpenTable answered profile ${table.profile}, not ${profile}`);
  check(
    table.turn_timeout && String(table.turn_timeout.seconds) === '30',
    () => `OpenTable answered turn_timeout ${JSON.stringify(table.turn_timeout)}, not 30 s`,
  );
  check(table.currency && table.currency.code === 'THB', 'the table is not in THB');
  check(
    response.events.length > 0 && response.events.every((e) => e.event && e.kind !== 'EVENT_KIND_UNSPECIFIED'),
    'OpenTable answered untyped events',
  );
  return table;
}

async function seatPlayers(api, tableId, names) {
  let table = null;
  for (const [index, name] of names.entries()) {
    table = (await api.cmd('TableService', 'TakeSeat', { table_id: tableId, player: name, seat: index + 1 }, name))
      .response.table;
  }
  return table;
}

// Drive a round from betting to its close with GetRound and GetLegalCommands.
async function playRound(api, roundId, seen) {
  let revealed = false;
  for (let step = 0; step < MAX_STEPS; step += 1) {
    const current = await api.round(roundId);
    const phase = current.phase;
    if (phase === 'ROUND_PHASE_CLOSED') return;
    if (phase === 'ROUND_PHASE_BETTING') {
      const legal = await api.legal(roundId, null, 'operator');
      check(legal.COMMAND_KIND_DEAL, () => `betting: the operator may not deal (${Object.keys(legal)})`);
      await api.cmd('RoundService', 'Deal', { round_id: roundId });
      seen.add('Deal');
    } else if (phase === 'ROUND_PHASE_SIDE_BETS') {
      const holders = Object.fromEntries(current.seats.map((s) => [s.seat, s.player]));
      for (const bet of current.bets) {
        if (holders[bet.seat] !== bet.player) continue; // a backer's stake takes no side bet
        const legal = await api.legal(roundId, bet.seat, bet.player);
        if (legal.COMMAND_KIND_PLACE_SIDE_BET) {
          await api.cmd('RoundService', 'PlaceSideBet', { round_id: roundId, seat: bet.seat, player: bet.player }, bet.player);
          seen.add('PlaceSideBet');
        }
      }
      await api.cmd('RoundService', 'CloseSideBets', { round_id: roundId });
      seen.add('CloseSideBets');
    } else if (phase === 'ROUND_PHASE_PLAYER_TURNS') {
      const seat = current.turn;
      check(seat, 'the players are to act but the round names no seat to act');
      const holder = current.seats.find((s) => s.seat === seat).player;
      const legal = await api.legal(roundId, seat, holder);
      if (legal.COMMAND_KIND_DRAW || legal.COMMAND_KIND_STAY) {
        const hand = current.hands.find((h) => h.seat === seat);
        const name = legal.COMMAND_KIND_DRAW && points(hand.cards) <= 4 ? 'Draw' : 'Stay';
        check(legal[`COMMAND_KIND_${name.toUpperCase()}`], `seat ${seat} may not ${name}`);
        await api.cmd('RoundService', name, { round_id: roundId, seat, player: holder }, holder);
        seen.add(name);
      } else {
        const mine = await api.legal(roundId, null, 'operator');
        check(mine.COMMAND_KIND_TIME_OUT_TURN, `seat ${seat} is to act but neither it nor the operator may`);
        await api.cmd('RoundService', 'TimeOutTurn', {
          round_id: roundId,
          expected_version: mine.COMMAND_KIND_TIME_OUT_TURN.expected_version,
        });
        seen.add('TimeOutTurn');
      }
    } else if (phase === 'ROUND_PHASE_BANKER_TURN') {
      const banker = current.banker_player; // empty: the house, played by the operator
      const who = banker || 'operator';
      const legal = await api.legal(roundId, 0, who);
      const reveal = legal.COMMAND_KIND_BANKER_REVEAL;
      const waiting = current.hands.filter((h) => h.seat !== 0 && !h.revealed).map((h) => h.seat);
      if (reveal && !revealed && waiting.length > 1 && reveal.seats.length > 0) {
        // reveal one hand first (the banker's choice), then draw or stay for the rest
        await api.cmd('RoundService', 'BankerReveal', { round_id: roundId, seats: [reveal.seats[0]], player: banker }, who);
        revealed = true;
        seen.add('BankerReveal');
      } else if (legal.COMMAND_KIND_BANKER_DRAW || legal.COMMAND_KIND_BANKER_STAY) {
        const hand = current.hands.find((h) => h.seat === 0);
        const name = legal.COMMAND_KIND_BANKER_DRAW && points(hand.cards) <= 4 ? 'BankerDraw' : 'BankerStay';
        await api.cmd('RoundService', name, { round_id: roundId, player: banker }, who);
        seen.add(name);
      } else {
        const mine = await api.legal(roundId, null, 'operator');
        check(mine.COMMAND_KIND_TIME_OUT_TURN, `the banker is to act but may not (${Object.keys(legal)})`);
        await api.cmd('RoundService', 'TimeOutTurn', {
          round_id: roundId,
          expected_version: mine.COMMAND_KIND_TIME_OUT_TURN.expected_version,
        });
        seen.add('TimeOutTurn');
      }
    } else {
      fail(`round ${roundId} stuck in phase ${phase}`);
    }
  }
  fail(`round ${roundId} did not close in ${MAX_STEPS} steps`);
}

function memberOf(event) {
  check(event.event, () => `event ${event.sequence} (${event.kind}) has no typed member`);
  return event.event;
}

// The closed round's record: typed events, the money, the seed, the audit.
async function audited(api, roundId, before, firstBet, bettor) {
  const closed = await api.round(roundId, 'ROUND_VIEW_FULL');
  check(closed.phase === 'ROUND_PHASE_CLOSED', `${roundId} is ${closed.phase}, not closed`);
  check(closed.outcome === 'ROUND_OUTCOME_SETTLED', `${roundId} ended ${closed.outcome}, not settled`);

  // typed events
  const events = closed.events;
  check(events.length > 0, 'GetRound FULL answered no events');
  for (const event of events) {
    const member = memberOf(event);
    check(
      event.kind === `EVENT_KIND_${member.toUpperCase()}`,
      () => `event ${event.sequence}: kind ${event.kind} but member ${member}`,
    );
    check(event.chain_digest === '' || /^[0-9a-f]{64}$/.test(event.chain_digest), 'a chain digest is not hex');
    check(Buffer.isBuffer(event.canonical_data) && event.canonical_data.length > 0, 'an event has no canonical data');
    check(event.record_time && big(event.record_time.seconds) > 0n, 'an event has no record time');
  }
  const kinds = events.map((e) => e.event);
  check(kinds[kinds.length - 1] === 'round_closed', `the last event is ${kinds[kinds.length - 1]}, not round_closed`);
  check(events[events.length - 1].round_closed.outcome === 'ROUND_OUTCOME_SETTLED', 'round_closed is not settled');
  const settled = events.filter((e) => e.event === 'bet_settled').map((e) => e.bet_settled);
  check(
    settled.length === closed.bets.length,
    `${settled.length} bet_settled events for ${closed.bets.length} bets`,
  );
  for (const bet of settled) {
    const m = bet.multiplier;
    check(m && /^-?\d+$/.test(m.numerator) && /^\d+$/.test(m.denominator), 'bet_settled.multiplier is not a Ratio');
    check(big(m.denominator) > 0n, 'bet_settled.multiplier has a denominator <= 0');
    check(bet.outcome.startsWith('BET_OUTCOME_') && bet.outcome !== 'BET_OUTCOME_UNSPECIFIED', 'a bet has no outcome');
  }
  const round = events.find((e) => e.event === 'round_settled').round_settled;
  const seed = events.find((e) => e.event === 'seed_revealed').seed_revealed.server_seed;
  check(seed === closed.server_seed, 'seed_revealed and the round disagree on the server seed');
  const digest = crypto.createHash('sha256').update(Buffer.from(seed, 'hex')).digest('hex');
  check(digest === closed.commitment, `SHA-256 of the revealed seed is ${digest}, not the commitment ${closed.commitment}`);

  // the money: the round balances, every wallet moved by its net, nothing stays reserved
  const nets = {};
  let total = big(closed.house_net) + big(closed.commission);
  for (const result of closed.results) {
    nets[result.player] = big(result.net);
    total += big(result.net);
  }
  check(total === 0n, `the round does not balance: nets + house + commission = ${total}`);
  check(big(round.house_net) === big(closed.house_net), 'round_settled and the round disagree on the house net');
  for (const [name, balance] of Object.entries(before)) {
    const wallet = await api.wallet(name);
    check(big(wallet.reserved) === 0n, `${name} still has ${wallet.reserved} reserved`);
    const expected = balance + (nets[name] || 0n);
    check(big(wallet.balance) === expected, `${name}'s balance is ${wallet.balance}, not ${expected}`);
  }

  // the same facts, streamed: WatchRound starts at round_opened (the stream's creation record,
  // round_record_started, is not a fact of the game) and ends after round_closed
  const facts = events.filter((e) => e.event !== 'round_record_started');
  const streamed = await api.watch(roundId);
  check(
    streamed.length === facts.length,
    `WatchRound streamed ${streamed.length} events, GetRound has ${facts.length} after the stream's creation`,
  );
  check(streamed[0].event === 'round_opened', `WatchRound began with ${streamed[0].event}, not round_opened`);
  for (const [index, event] of streamed.entries()) {
    check(
      memberOf(event) === facts[index].event && String(event.sequence) === String(facts[index].sequence),
      () => `WatchRound event ${index} is ${event.event} #${event.sequence}, not ${facts[index].event}`,
    );
  }

  // a late retry of the round's first bet: its first events again, and it writes nothing
  await api.late('RoundService', 'PlaceBet', firstBet, bettor);
  const after = await api.round(roundId, 'ROUND_VIEW_BASIC');
  check(after.version === closed.version, `a late retry moved the round from version ${closed.version} to ${after.version}`);
  await api.late('RoundService', 'PlaceBet', firstBet, bettor, after);

  // the audit
  const verdict = await api.get('AuditService', 'VerifyRound', { round_id: roundId });
  check(verdict.ok === true, `VerifyRound(${roundId}) is not ok: ${verdict.first_difference}`);
  const names = new Set(verdict.checks.map((c) => c.name));
  for (const name of ['chain', 'commitment', 'replay', 'money']) {
    check(names.has(name), `VerifyRound ran no ${name} check`);
  }
  const exported = await api.get('AuditService', 'ExportRound', { round_id: roundId });
  check(exported.bundle_json.length > 0, `ExportRound(${roundId}) returned no bundle`);
  let bundle;
  try {
    bundle = JSON.parse(exported.bundle_json);
  } catch (error) {
    fail(`ExportRound(${roundId}) bundle is not JSON: ${error.message}`);
  }
  check(bundle.bundle_digest === exported.bundle_digest, 'the bundle digest differs from the bundle_digest field');
  check(/^[0-9a-f]{64}$/.test(exported.bundle_digest), 'the bundle digest is not SHA-256 hex');

  return { closed, nets, events: events.length, settled };
}

// --- one round of each profile -----------------------------------------------------------------

async function classic(api, prefix, seen) {
  const tableId = `${prefix}-classic`;
  const players = ['alice', 'bob', 'carol'];
  await openTable(api, tableId, 'PROFILE_CLASSIC', {});
  await seatPlayers(api, tableId, ['alice', 'bob']);
  const before = await balances(api, players);
  const opened = (await api.cmd('RoundService', 'StartRound', { table_id: tableId, client_seed: 'node' })).response.round;
  const first = await api.cmd('RoundService', 'PlaceBet', { round_id: opened.round_id, seat: 1, player: 'alice', stake: 300 }, 'alice');
  await api.cmd('RoundService', 'PlaceBet', { round_id: opened.round_id, seat: 2, player: 'bob', stake: '500', client_seed: 'bob' }, 'bob');
  await api.cmd('RoundService', 'PlaceBet', { round_id: opened.round_id, seat: 2, player: 'carol', stake: 100 }, 'carol'); // backs bob
  await playRound(api, opened.round_id, seen);
  return { opened, ...(await audited(api, opened.round_id, before, first, 'alice')) };
}

async function ante(api, prefix, seen) {
  const tableId = `${prefix}-ante`;
  const players = ['alice', 'bob'];
  const table = await openTable(api, tableId, 'PROFILE_ANTE', { seats: 0 });
  check(table.seats === 5, `an ante table has ${table.seats} betting positions, not 5`);
  const before = await balances(api, players);
  const opened = (await api.cmd('RoundService', 'StartRound', { table_id: tableId })).response.round;
  const first = await api.cmd('RoundService', 'PlaceBet', { round_id: opened.round_id, seat: 1, player: 'alice', stake: 200 }, 'alice');
  await api.cmd('RoundService', 'PlaceBet', { round_id: opened.round_id, seat: 3, player: 'bob', stake: 400 }, 'bob');
  await playRound(api, opened.round_id, seen);
  const result = await audited(api, opened.round_id, before, first, 'alice');
  for (const bet of result.settled) {
    check(
      bet.ante_net !== null && bet.ante_net !== undefined && big(bet.ante_net) + big(bet.bet_net) === big(bet.net),
      'an ante bet_settled does not split its net into ante_net + bet_net',
    );
  }
  return { opened, ...result };
}

async function room(api, prefix, seen) {
  const tableId = `${prefix}-room`;
  const players = ['alice', 'bob', 'carol', 'dave'];
  await openTable(api, tableId, 'PROFILE_ROOM', { seats: 5 });
  await seatPlayers(api, tableId, players);
  for (const [who, rounds] of [['alice', 5], ['bob', 0], ['carol', 0], ['dave', 10]]) {
    await api.cmd('TableService', 'BidForBanker', { table_id: tableId, player: who, rounds }, who);
  }
  const table = (await api.cmd('TableService', 'CloseBankerBid', { table_id: tableId })).response.table;
  check(table.banker === 'dave', `the room's banker is ${JSON.stringify(table.banker)}, not dave (the longest bid)`);
  const before = await balances(api, players);
  const opened = (await api.cmd('RoundService', 'StartRound', { table_id: tableId })).response.round;
  check(opened.banker_player === 'dave', 'the room round has no player-banker');
  let first = null;
  for (const who of ['alice', 'bob', 'carol']) {
    const seat = opened.seats.find((s) => s.player === who).seat;
    const sent = await api.cmd('RoundService', 'PlaceBet', { round_id: opened.round_id, seat, player: who, stake: 500 }, who);
    first = first || sent;
  }
  await playRound(api, opened.round_id, seen);
  const result = await audited(api, opened.round_id, before, first, 'alice');
  check('dave' in result.nets, 'the player-banker has no result');
  check(big(result.closed.house_net) === 0n, 'the house has a net in a room round');
  return { opened, ...result };
}

async function kingmaker(api, prefix, seen) {
  const tableId = `${prefix}-kingmaker`;
  const players = ['alice', 'bob', 'carol', 'dave', 'erin'];
  await openTable(api, tableId, 'PROFILE_KINGMAKER', { seats: 5, min_stake: 1000, max_stake: 1000 });
  await seatPlayers(api, tableId, players);
  const before = await balances(api, players);
  const opened = (await api.cmd('RoundService', 'StartRound', { table_id: tableId })).response.round;
  let first = null;
  for (const [index, who] of players.entries()) {
    const sent = await api.cmd('RoundService', 'PlaceBet', { round_id: opened.round_id, seat: index + 1, player: who, stake: 1000 }, who);
    first = first || sent;
  }
  await playRound(api, opened.round_id, seen);
  const result = await audited(api, opened.round_id, before, first, 'alice');
  const sideWindow = result.closed.events.find((e) => e.event === 'side_bet_window_opened');
  if (sideWindow) check(seen.has('CloseSideBets'), 'the side-bet window opened but was never closed');
  return { opened, ...result, sideBets: result.closed.side_bets.length };
}

const PLAY = { classic, ante, room, kingmaker };

async function openWallets(api, names) {
  for (const name of names) {
    let wallet;
    try {
      wallet = (await api.cmd('WalletService', 'OpenWallet', { wallet_id: name, currency_code: 'THB' })).response.wallet;
    } catch (error) {
      if (!String(error.message).includes('ALREADY_EXISTS')) throw error;
      wallet = await api.wallet(name); // a server that already has the wallet: play on with it
    }
    check(wallet.currency && wallet.currency.code === 'THB', `${name}'s wallet is not in THB`);
    const { response } = await api.cmd('WalletService', 'Deposit', { wallet_id: name, amount: '200000' });
    const deposited = response.events.find((e) => e.event === 'wallet_deposited');
    check(deposited && String(deposited.wallet_deposited.amount) === '200000', 'Deposit recorded no wallet_deposited event');
    check(deposited.wallet_after && big(deposited.wallet_after.balance) >= 200000n, 'wallet_deposited has no balance after');
  }
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  let v1;
  try {
    v1 = loadApi(options.proto);
  } catch (error) {
    process.stderr.write(`play.js: cannot load ${options.proto}: ${error.message}\n`);
    process.exit(1);
  }
  const tokens = { operator: options.operator, ...options.players };
  const api = new Client(v1, options.address, tokens, options.prefix);
  const failures = [];
  try {
    await new Promise((resolve, reject) =>
      api.stubs.WalletService.waitForReady(Date.now() + 10000, (error) =>
        error ? reject(new Failure(`no server at ${options.address}: ${error.message}`)) : resolve(),
      ),
    );
    await openWallets(api, Object.keys(options.players));
    for (const profile of options.profiles) {
      const seen = new Set();
      const started = Date.now();
      try {
        const played = await PLAY[profile](api, options.prefix, seen);
        const line = {
          profile,
          round_id: played.closed.round_id,
          phase: played.closed.phase,
          outcome: played.closed.outcome,
          nets: Object.fromEntries(Object.entries(played.nets).map(([k, v]) => [k, plain(v)])),
          house_net: plain(played.closed.house_net),
          commission: plain(played.closed.commission),
          side_bets: played.closed.side_bets.length,
          events: played.events,
          bet_settled: played.settled.map((b) => ({
            seat: b.seat,
            player: b.player,
            outcome: b.outcome,
            multiplier: `${b.multiplier.numerator}/${b.multiplier.denominator}`,
            net: plain(b.net),
          })),
          commands: [...seen].sort(),
          verified: true,
          ms: Date.now() - started,
        };
        process.stdout.write(`${JSON.stringify(line)}\n`);
      } catch (error) {
        if (!(error instanceof Failure)) throw error;
        failures.push(`${profile}: ${error.message}`);
      }
    }
  } catch (error) {
    failures.push(error instanceof Failure ? error.message : (error && error.stack) || String(error));
  } finally {
    api.close();
  }
  if (failures.length) {
    for (const failure of failures) process.stderr.write(`play.js: FAILED ${failure}\n`);
    process.exit(1);
  }
  process.stderr.write(`play.js: ${options.profiles.length} profiles closed and verified (${api.retries} retries answered the same)\n`);
}

main().catch((error) => {
  process.stderr.write(`play.js: FAILED ${(error && error.stack) || error}\n`);
  process.exit(1);
});
