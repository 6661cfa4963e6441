/* pokdeng's in-browser verifier, part 3: the checks of a round bundle, in the order of docs/audit.md
   ("Checking a bundle without pokdeng"): form, bundle digest, chain, record, commitment, client seed,
   shuffle, cards, turns, hands, money, copies, balances, inclusion, log inclusion, anchor. Each check runs
   on its own and names what it found wrong; a field that is missing or malformed fails the check that
   reads it. The same checks as docs/examples/worked_round.py, check for check; the play and its money
   (turns, hands, money, copies, balances) are part 4, verify-play.js. */
(function (root) {
  "use strict";
  const V = (root.PokdengVerify = root.PokdengVerify || {});
  const C = V.core;
  const R = V.rules;
  const { Failed, require } = C;

  class Missing extends Error {}

  /** The parsed bundle, read strictly: reading a member that is not there is an error (as in Python). */
  const proxies = new WeakMap();
  function strict(value) {
    if (value === null || typeof value !== "object") return value;
    if (proxies.has(value)) return proxies.get(value);
    const proxy = new Proxy(value, {
      get(target, prop, receiver) {
        if (typeof prop === "symbol" || prop in target) return strict(Reflect.get(target, prop, receiver));
        if (prop === "then" || prop === "toJSON") return undefined;
        throw new Missing(`no ${JSON.stringify(prop)}`);
      },
    });
    proxies.set(value, proxy);
    return proxy;
  }
  const has = (object, key) => object !== null && typeof object === "object" && Object.prototype.hasOwnProperty.call(object, key);
  const opt = (object, key) => (has(object, key) ? object[key] : undefined);
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

  /** Equality of JSON values, where an integer and a BigInt of the same value are equal. */
  function same(a, b) {
    if (typeof a === "bigint" || typeof b === "bigint") {
      if (typeof a === "boolean" || typeof b === "boolean") return false;
      try {
        return BigInt(a) === BigInt(b);
      } catch (_) {
        return false;
      }
    }
    if (Array.isArray(a) || Array.isArray(b)) {
      return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
    }
    if (isObject(a) || isObject(b)) {
      if (!isObject(a) || !isObject(b)) return false;
      const ka = Object.keys(a).sort();
      const kb = Object.keys(b).sort();
      return same(ka, kb) && ka.every((k) => same(a[k], b[k]));
    }
    return a === b;
  }
  const big = (value) => {
    if (typeof value !== "number" || !Number.isInteger(value)) throw new Failed(`not an amount: ${JSON.stringify(value)}`);
    return BigInt(value);
  };
  const bySeat = (a, b) => a - b;
  const repr = (text) => JSON.stringify(text);

  class Verdict {
    constructor(subject) {
      this.subject = subject;
      this.checks = [];
      this.warnings = [];
    }
    add(name, ok, detail) {
      this.checks.push({ name, ok, detail });
      return ok;
    }
    get ok() {
      return this.checks.length > 0 && this.checks.every((c) => c.ok);
    }
    get failed() {
      return this.checks.filter((c) => !c.ok).map((c) => c.name);
    }
    render() {
      const lines = [`${this.ok ? "PASS" : "FAIL"}  ${this.subject}`];
      for (const c of this.checks) lines.push(`  ${c.ok ? "ok " : "BAD"}  ${c.name}: ${c.detail}`);
      for (const w of this.warnings) lines.push(`  WARN ${w}`);
      return lines.join("\n");
    }
  }

  async function check(verdict, name, run) {
    try {
      return verdict.add(name, true, await run());
    } catch (error) {
      if (error instanceof Failed) return verdict.add(name, false, error.message);
      return verdict.add(name, false, `missing or malformed field: ${error && error.message}`);
    }
  }

  // the documented form (docs/audit.md, "The bundle"; docs/events.md; docs/checkpoints.md)
  const BUNDLE_FIELDS = ["format", "format_version", "round_id", "table_id", "round_no", "profile", "engine_version",
    "shuffle", "decisions", "payouts", "settlement", "balances", "times", "events", "chain", "inclusion", "log",
    "bundle_digest"];
  const OPTIONAL_FIELDS = ["inclusion", "log"]; // null, or absent from bundles made before them
  const EVENT_FIELDS = ["command_id", "data", "digest", "kind", "position", "timestamp"];
  const BALANCE_FIELDS = ["after", "before", "net", "wallet"];
  const INCLUSION_FIELDS = ["checkpoint_digest", "checkpoint_position", "index", "leaf", "path", "period", "root",
    "size", "table_id"];
  const LOG_FIELDS = ["head", "index", "leaf", "path"];
  const HEAD_FIELDS = ["format", "format_version", "key_id", "log_id", "root_hash", "signature", "timestamp",
    "tree_size"];
  const KINDS = ["bet_placed", "bet_settled", "card_drawn", "cards_dealt", "client_seed_contributed",
    "client_seed_fixed", "contributions_opened", "hands_revealed", "player_stood", "pok_declared", "round_closed",
    "round_opened", "round_settled", "round_voided", "seed_revealed", "shuffle_committed", "side_bet_placed",
    "side_bet_window_opened", "side_bets_settled", "turn_timed_out"];
  const SENT_BY_OPERATOR = ["round_opened", "cards_dealt", "side_bets_settled", "turn_timed_out", "round_voided"];
  // each kind's data members (docs/events.md, "Round stream"): exactly these; those of ADDED_DATA were added after
  // rounds were recorded without them, which lack them (read as "" and THB): a record may leave them out
  const EVENT_DATA = {
    round_opened: ["round_id", "table_id", "round_no", "profile_name", "profile_version", "profile_options",
      "engine_version", "banker_player", "seats", "min_stake", "max_stake", "currency", "by"],
    contributions_opened: ["rule"],
    shuffle_committed: ["commitment", "client_seed", "nonce", "algorithm", "shoe_size"],
    client_seed_contributed: ["contributor", "client_seed", "by"],
    bet_placed: ["seat", "player", "stake", "reserved", "banker_reserved", "by"],
    client_seed_fixed: ["client_seed", "rule", "contributions"],
    cards_dealt: ["cards", "banker_up_card", "by"],
    pok_declared: ["seat", "cards", "taem", "label"],
    side_bet_window_opened: ["up_card"],
    side_bet_placed: ["seat", "player", "stake", "reserved", "by"],
    side_bets_settled: ["natural", "results", "by"],
    turn_timed_out: ["seat", "action", "by"],
    card_drawn: ["seat", "card", "reason", "by"],
    player_stood: ["seat", "reason", "by"],
    hands_revealed: ["seats", "hands", "selective", "by"],
    bet_settled: ["seat", "player", "stake", "outcome", "multiplier", "gross", "commission", "net", "hand",
      "banker_hand", "ante_net", "bet_net"],
    round_settled: ["wallets", "banker_net_before_commission", "banker_commission", "commission", "house_net"],
    round_voided: ["reason", "wallets", "by"],
    seed_revealed: ["server_seed"],
    round_closed: ["outcome"],
  };
  const ADDED_DATA = (kind) => (kind === "round_opened" ? ["currency", "by"] : EVENT_DATA[kind].includes("by") ? ["by"] : []);
  const sameKeys = (object, keys) => same(Object.keys(object).sort(), [...keys].sort());

  class BundleCheck {
    constructor(raw, keys) {
      this.raw = raw;
      this.keys = keys; // Map: key id → the 32 bytes of an Ed25519 public key
    }
    first(kind) {
      return this.events.find((e) => e.kind === kind) || null;
    }
    all(kind) {
      return this.events.filter((e) => e.kind === kind);
    }
    get opening() {
      const opened = this.events[0];
      require(opened.kind === "round_opened", `event ${opened.position} is ${opened.kind}, not round_opened`);
      return opened.data;
    }
    get rules() {
      const o = this.opening;
      const found = R.PROFILES[`${o.profile_name}@${o.profile_version}`];
      require(found !== undefined, `profile ${o.profile_name} v${o.profile_version} is not known here`);
      return found;
    }
    get options() {
      return Object.fromEntries(this.opening.profile_options.map(([name, on]) => [name, on]));
    }

    async run() {
      let parsed;
      try {
        parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(this.raw));
      } catch (error) {
        const verdict = new Verdict("bundle");
        verdict.add("form", false, `not JSON: ${error.message}`);
        return verdict;
      }
      const verdict = new Verdict(`bundle of round ${isObject(parsed) ? String(opt(parsed, "round_id") ?? "?") : "?"}`);
      if (!isObject(parsed) || !Array.isArray(parsed.events) || parsed.events.length === 0) {
        verdict.add("form", false, "not a round bundle (no events)");
        return verdict;
      }
      this.plain = parsed;
      this.bundle = strict(parsed);
      this.events = this.bundle.events;
      const steps = [
        ["form", () => this.form()], ["bundle digest", () => this.digest()], ["chain", () => this.chain()],
        ["record", () => this.record()], ["commitment", () => this.commitment(verdict)],
        ["client seed", () => this.clientSeed()], ["shuffle", () => this.shuffle()], ["cards", () => this.cards()],
        ["turns", () => this.turns()], ["hands", () => this.hands()], ["money", () => this.money()],
        ["copies", () => this.copies()], ["balances", () => this.balances()],
      ];
      for (const [name, step] of steps) await check(verdict, name, step);
      if (opt(parsed, "inclusion") !== undefined && parsed.inclusion !== null) {
        await check(verdict, "inclusion", () => this.inclusion());
      }
      await this.anchor(verdict);
      return verdict;
    }

    // -- 1. the file ------------------------------------------------------------------------------
    form() {
      const b = this.plain;
      require(opt(b, "format") === "pokdeng-round-bundle" && opt(b, "format_version") === 1,
        "not a pokdeng-round-bundle of format_version 1");
      // exactly the documented fields: nothing may ride along that no check reads (docs/audit.md)
      const fields = Object.keys(b);
      const missing = BUNDLE_FIELDS.filter((k) => !OPTIONAL_FIELDS.includes(k) && !fields.includes(k));
      const unknown = fields.filter((k) => !BUNDLE_FIELDS.includes(k));
      require(missing.length === 0 && unknown.length === 0,
        `fields missing ${JSON.stringify(missing)} or unknown ${JSON.stringify(unknown)}`);
      for (const event of b.events) {
        require(isObject(event) && sameKeys(event, EVENT_FIELDS), `an event with other fields than ${EVENT_FIELDS}`);
        require(KINDS.includes(event.kind), `event ${event.position}: kind ${repr(event.kind)} is not a round's`);
        const where = `event ${event.position} (${event.kind})`;
        require(isObject(event.data), `${where}: data is not an object`);
        const listed = EVENT_DATA[event.kind];
        const extra = Object.keys(event.data).filter((k) => !listed.includes(k)).sort();
        const lacking = listed.filter((k) => !has(event.data, k) && !ADDED_DATA(event.kind).includes(k)).sort();
        require(extra.length === 0, `${where}: data with members ${JSON.stringify(extra)} that docs/events.md does not list`);
        require(lacking.length === 0, `${where}: data without ${JSON.stringify(lacking)}`);
      }
      for (const entry of Array.isArray(b.balances) ? b.balances : []) {
        require(isObject(entry) && sameKeys(entry, BALANCE_FIELDS), `a balance with other fields than ${BALANCE_FIELDS}`);
      }
      const inclusion = opt(b, "inclusion");
      require(inclusion == null || (isObject(inclusion) && sameKeys(inclusion, INCLUSION_FIELDS)),
        "inclusion: not the documented fields");
      const log = opt(b, "log");
      require(log == null || (isObject(log) && sameKeys(log, LOG_FIELDS) && isObject(log.head) && sameKeys(log.head, HEAD_FIELDS)),
        "log: not the documented fields");
      const expected = C.concat(C.canonicalBytes(b), [10]);
      if (!C.equalBytes(this.raw, expected)) {
        let at = 0;
        while (at < Math.min(this.raw.length, expected.length) && this.raw[at] === expected[at]) at++;
        throw new Failed(`the file is not its canonical JSON and a newline (the first difference at byte ${at})`);
      }
      return `canonical JSON (RFC 8785) and a newline, ${this.raw.length} bytes`;
    }
    async digest() {
      const body = Object.fromEntries(Object.entries(this.plain).filter(([k]) => k !== "bundle_digest"));
      const computed = await C.sha256hex(C.canonicalBytes(body));
      require(computed === opt(this.plain, "bundle_digest"), `SHA-256 of the body is ${computed}, not the stated one`);
      return computed;
    }

    // -- 2. the record ----------------------------------------------------------------------------
    async chain() {
      const roundId = this.bundle.round_id;
      let previous = await C.genesis(roundId);
      const stated = this.bundle.chain;
      require(stated.version === C.CHAIN_VERSION, `chain version ${repr(stated.version)}`);
      require(stated.genesis === previous, `the stated genesis is not SHA-256(pokdeng-chain-v1 0x00 ${roundId})`);
      let expected = 2;
      for (const event of this.events) {
        const { position, kind } = event;
        require(position === expected, `position ${position} where ${expected} was expected`);
        const digest = await C.link(previous, kind, event.data, position, event.command_id, event.timestamp);
        require(digest === event.digest, `event ${position} (${kind}) does not match its digest`);
        previous = digest;
        expected += 1;
      }
      require(stated.last === previous, "the stated chain end is not the last event's digest");
      return `${this.events.length} events linked from the genesis of ${roundId}, ending at ${previous}`;
    }

    record() {
      const kinds = this.events.map((e) => e.kind);
      const opened = this.opening;
      const b = this.bundle;
      require(opened.round_id === b.round_id && opened.table_id === b.table_id, "another round's opening");
      require(opened.round_no === b.round_no && b.round_id === `${b.table_id}#${b.round_no}`,
        "the round id is not <table id>#<round number>");
      require(kinds[kinds.length - 1] === "round_closed" && kinds.filter((k) => k === "round_closed").length === 1,
        "the record does not end at its close");
      const ends = kinds.filter((k) => k === "round_settled" || k === "round_voided");
      require(ends.length === 1, "a round is settled or voided, once");
      const outcome = ends[0] === "round_settled" ? "settled" : "voided";
      const last = this.events[this.events.length - 1];
      require(last.data.outcome === outcome, `round_closed says ${JSON.stringify(last.data)}`);
      const seats = new Map(opened.seats.map(([seat, holder]) => [seat, holder]));
      for (const event of [...this.all("bet_placed"), ...this.all("side_bet_placed")]) {
        const { seat, player } = event.data;
        const where = `event ${event.position} (${event.kind})`;
        require(seats.has(seat) && player !== opened.banker_player, `${where}: no stake on seat ${seat} by ${player}`);
        require(this.rules.comparison !== "ranked" || seats.get(seat) === player, `${where}: only the holder stakes`);
      }
      const committed = this.first("shuffle_committed");
      require(committed !== null && kinds.indexOf("shuffle_committed") <= 2, "the opening commits the shuffle");
      require(committed.data.nonce === b.round_no, `the shuffle's nonce ${committed.data.nonce} is not the round's number`);
      for (const event of this.events) {  // an operator's command names its sender (absent: records before senders)
        require(!SENT_BY_OPERATOR.includes(event.kind) || opt(event.data, "by") !== "",
          `event ${event.position} (${event.kind}): an operator's command names its sender (by)`);
      }
      const opening = this.events[0].command_id;  // the opening's own events: the first run of its command id
      const after = this.events.findIndex((event) => event.command_id !== opening);
      for (const event of after < 0 ? [] : this.events.slice(after)) {  // the platform's ContributeSeed
        require(event.kind !== "client_seed_contributed" || event.data.contributor !== "" ||
          opt(event.data, "by") !== "", `event ${event.position}: the platform's ContributeSeed names its sender (by)`);
      }
      if (kinds.includes("contributions_opened")) {
        require(committed.data.client_seed === "", "shuffle_committed carries no client seed");
      }
      require(kinds.filter((k) => k === "seed_revealed").length <= 1, "the seed is revealed once");
      if (kinds.includes("seed_revealed")) {
        require(kinds.indexOf("seed_revealed") === kinds.length - 2, "seed_revealed comes just before round_closed");
      } else {
        require(outcome === "voided", "a settled round reveals its seed");
      }
      return `round ${b.round_id} from round_opened to round_closed (${outcome})`;
    }

    async commitment(verdict) {
      const shuffled = this.bundle.shuffle;
      const committed = this.first("shuffle_committed");
      require(committed !== null, "no shuffle_committed");
      require(committed.data.commitment === shuffled.commitment, "shuffle.commitment is not the recorded one");
      const revealed = this.first("seed_revealed");
      if (revealed === null) {
        require(shuffled.server_seed === "" && same(shuffled.deck_order, []), "a seed that was never revealed");
        verdict.warnings.push("the server seed was withheld (voided without revealing it): its cards are unchecked");
        return "withheld: the round was voided without revealing its server seed";
      }
      require(revealed.data.server_seed === shuffled.server_seed, "shuffle.server_seed is not the revealed one");
      const computed = await C.commitment(C.fromHex(shuffled.server_seed));
      require(computed === shuffled.commitment, "SHA-256 of the server seed is not the commitment");
      return `SHA-256 of the revealed server seed is the commitment ${shuffled.commitment}`;
    }

    async clientSeed() {
      const kinds = this.events.map((e) => e.kind);
      const shuffled = this.bundle.shuffle;
      const committed = kinds.indexOf("shuffle_committed");
      require(committed >= 0, "no shuffle_committed");
      const cards = kinds.flatMap((k, i) => (k === "cards_dealt" || k === "card_drawn" ? [i] : []));
      const firstCard = cards.length ? cards[0] : kinds.length;
      if (!kinds.includes("contributions_opened")) { // a round of engine 1.0.0: the seed came with the commitment
        require(!kinds.includes("client_seed_fixed") && !kinds.includes("client_seed_contributed"),
          "contributions in a round that opened none");
        require(committed < firstCard, "the commitment comes before the first card");
        const seed = this.events[committed].data.client_seed;
        require(shuffled.client_seed === seed, "shuffle.client_seed is not the one recorded with the commitment");
        return `${repr(seed)}, given with the commitment (a round without contributions)`;
      }
      const opened = kinds.indexOf("contributions_opened");
      require(kinds.filter((k) => k === "contributions_opened").length === 1 && opened < committed,
        "contributions open before the commitment");
      const rule = this.events[opened].data.rule;
      require(rule === "pokdeng-client-seed-v1", `unknown rule ${repr(rule)}`);
      require(opt(shuffled, "client_seed_rule") === rule, "shuffle.client_seed_rule is not the round's rule");
      const latest = new Map();
      let fixed = null;
      this.events.forEach((event, i) => {
        if (event.kind === "client_seed_contributed") {
          require(i > committed, `event ${event.position}: a contribution before the commitment`);
          require(fixed === null, `event ${event.position}: a contribution after the client seed was fixed`);
          latest.set(event.data.contributor, event.data.client_seed);
        } else if (event.kind === "client_seed_fixed") {
          require(fixed === null, `event ${event.position}: the client seed is fixed twice`);
          require((committed < i && i < firstCard) || cards.length === 0, `event ${event.position}: fixed after a card`);
          fixed = event;
        }
      });
      if (fixed === null) {
        require(cards.length === 0, "cards were dealt, but no client seed was fixed");
        require(same(shuffled.deck_order, []), "a deck order without a fixed client seed");
        return `never fixed: voided before the deal (${latest.size} contribution(s))`;
      }
      const data = fixed.data;
      const expected = [...latest.entries()].map(([c, s]) => [c, s]).sort((p, q) => C.byCodePoints(p[0], q[0]));
      require(data.rule === rule, `client_seed_fixed names rule ${repr(data.rule)}`);
      require(same([...data.contributions].map((p) => [...p]), expected), "it does not list each last contribution, sorted");
      const derived = await C.deriveClientSeed(expected);
      require(data.client_seed === derived, `the contributions derive ${derived}, not ${data.client_seed}`);
      require(shuffled.client_seed === derived, "shuffle.client_seed is not the fixed one");
      require(same(opt(shuffled, "contributions"), expected), "shuffle.contributions are not the ones fixed");
      return `${derived}, derived from ${expected.length} contribution(s) after the commitment, before the first card`;
    }

    async shuffle() {
      const shuffled = this.bundle.shuffle;
      const committed = this.first("shuffle_committed");
      require(committed !== null, "no shuffle_committed");
      const data = committed.data;
      require(shuffled.algorithm === data.algorithm && data.algorithm === "pokdeng-shuffle-v1", "not pokdeng-shuffle-v1");
      require(shuffled.nonce === data.nonce, "shuffle.nonce is not the recorded nonce");
      require(shuffled.decks === this.rules.decks && data.shoe_size === 52 * shuffled.decks,
        "shuffle.decks is not the profile's (or not the recorded shoe size)");
      const kinds = this.events.map((e) => e.kind);
      if (shuffled.server_seed === "" || (this.first("client_seed_fixed") === null && kinds.includes("contributions_opened"))) {
        require(same(shuffled.deck_order, []), "a deck order without a seed or a fixed client seed");
        return "no shoe: no seed revealed or no client seed fixed";
      }
      const deck = await C.shuffle(C.fromHex(shuffled.server_seed), shuffled.client_seed, data.nonce, shuffled.decks);
      require(same(shuffled.deck_order, deck), "shuffle.deck_order is not the shuffle of the seeds");
      return `${deck.length} cards of pokdeng-shuffle-v1 from the server seed, client seed and nonce ${data.nonce}`;
    }

    cards() {
      const deck = this.bundle.shuffle.deck_order;
      if (deck.length === 0) return "no shoe to check the cards against";
      const opened = this.opening;
      const betting = [...new Set(this.all("bet_placed").map((e) => e.data.seat))].sort(bySeat);
      const dealtSeats = this.rules.comparison === "ante" ? opened.seats.map(([seat]) => seat) : betting;
      const held = new Map();
      let used = 0;
      const next = (where) => {
        require(used < deck.length, `${where}: the shoe has no card left`);
        return deck[used];
      };
      for (const event of this.events) {
        const data = event.data;
        const where = `event ${event.position}`;
        if (event.kind === "cards_dealt") {
          const order = data.cards.map(([seat]) => seat);
          const want = [...[...dealtSeats].sort(bySeat), 0];
          require(same(order, [...want, ...want]), `${where}: the deal order ${JSON.stringify(order)}`);
          for (const [seat, text] of data.cards) {
            const shoe = next(where);
            require(text === shoe, `${where}: ${text} dealt where the shoe has ${shoe}`);
            if (!held.has(seat)) held.set(seat, []);
            held.get(seat).push(text);
            used += 1;
          }
          const up = data.banker_up_card;
          require(up === null || up === held.get(0)[0], "the up card is not the banker's first card");
        } else if (event.kind === "card_drawn") {
          const shoe = next(where);
          require(data.card === shoe, `${where}: ${data.card} drawn, the shoe has ${shoe}`);
          require((held.get(data.seat) || []).length === 2, `${where}: a third card to a hand without two`);
          held.get(data.seat).push(data.card);
          used += 1;
        } else if (event.kind === "pok_declared") {
          require(same([...data.cards], held.get(data.seat) || null) && R.taem([...data.cards]) >= 8,
            `${where}: not the seat's pok`);
        } else if (event.kind === "hands_revealed") {
          for (const [seat, cards] of data.hands) {
            require(same([...cards], held.get(seat) || null), `${where}: seat ${seat} does not hold ${JSON.stringify(cards)}`);
          }
        }
      }
      if (this.rules.decks === 1) require(new Set(deck.slice(0, used)).size === used, "a card of a single deck dealt twice");
      return `${used} cards, dealt and drawn in the shoe's order from deck_order[0]`;
    }

    // -- 4. proofs ---------------------------------------------------------------------------------
    async inclusion() {
      const proof = this.bundle.inclusion;
      const leaf = await C.leafHash(this.bundle.round_id, this.bundle.chain.last);
      require(C.hex(leaf) === proof.leaf, "the leaf is not the hash of the round id and its last digest");
      require(proof.table_id === this.bundle.table_id, "a checkpoint of another table");
      const root = await C.rootFromInclusion(leaf, proof.index, proof.size, proof.path.map(C.fromHex));
      require(root !== null && C.hex(root) === proof.root, "the path does not lead to the checkpoint's root");
      return `leaf ${proof.index} of ${proof.size} under root ${proof.root} (${repr(proof.period)})`;
    }

    async anchor(verdict) {
      const anchor = opt(this.plain, "log") === undefined ? null : this.bundle.log;
      if (anchor === null) {
        const text = "unanchored: no signed tree head covers this round";
        if (this.keys.size) verdict.add("anchor", false, text);
        else verdict.warnings.push(text);
        return;
      }
      const included = async () => {
        const head = anchor.head;
        require(head.format === "pokdeng-signed-tree-head" && head.format_version === 1, "not a tree head");
        const leaf = await C.leafHash(this.bundle.round_id, this.bundle.chain.last);
        require(C.hex(leaf) === anchor.leaf, "the leaf is not the hash of the round id and its last digest");
        const root = await C.rootFromInclusion(leaf, anchor.index, head.tree_size, anchor.path.map(C.fromHex));
        require(root !== null && C.hex(root) === head.root_hash, "the path does not lead to the head's root");
        return `leaf ${anchor.index} of ${head.tree_size} under root ${head.root_hash}`;
      };
      if (!(await check(verdict, "log inclusion", included))) return;
      const head = anchor.head;
      if (!this.keys.size) {
        verdict.warnings.push(`unanchored: the signature of key ${head.key_id} was not checked (give the operator's public key)`);
        return;
      }
      let unsupported = "";
      await check(verdict, "anchor", async () => {
        const message = C.headSignedBytes(head);
        const publicKey = this.keys.get(head.key_id);
        require(publicKey !== undefined, `signed by key ${head.key_id}, not among the keys given`);
        const signature = C.fromHex(head.signature);
        require(signature.length === 64, "the signature is not 64 bytes");
        let ok;
        try {
          ok = await C.ed25519Verify(publicKey, signature, message);
        } catch (error) {
          if (!(error instanceof C.Unsupported)) throw error;
          unsupported = error.message;
          return "not checked";
        }
        require(ok, `the signature does not verify with key ${head.key_id}`);
        return `Ed25519 signature of key ${head.key_id}: log ${head.log_id}, size ${head.tree_size}`;
      });
      if (unsupported) {
        verdict.checks.pop();
        verdict.warnings.push(`unanchored: ${unsupported}, so the signature of key ${head.key_id} was not checked`);
      }
    }
  }

  /** Public keys by key id, from text: 64 hex digits each, or lines of ``[KEY_ID] PUBLIC_KEY`` (what
   * ``pokdeng keys show`` prints; ``#`` starts a comment). */
  async function readKeys(text) {
    const keys = new Map();
    for (const line of String(text || "").split(/\r?\n/)) {
      for (const word of line.split("#", 1)[0].split(/[\s,]+/)) {
        if (!word) continue;
        if (/^[0-9a-f]{16}$/i.test(word)) continue; // a key id before its key
        require(/^[0-9a-fA-F]{64}$/.test(word), `not an Ed25519 public key (64 hex digits): ${word.slice(0, 20)}`);
        const raw = C.fromHex(word);
        keys.set(await C.keyId(raw), raw);
      }
    }
    return keys;
  }

  /** Check a bundle's bytes; ``keys`` as ``readKeys`` gives them. Never throws: a verdict says it all. */
  async function verify(raw, keys) {
    try {
      return await new BundleCheck(raw, keys || new Map()).run();
    } catch (error) {
      const verdict = new Verdict("bundle");
      verdict.add("form", false, `the check could not run: ${error && error.message}`);
      return verdict;
    }
  }

  V.util = { same, big, bySeat, repr, opt, has, isObject };
  V.BundleCheck = BundleCheck;
  V.eventData = { fields: EVENT_DATA, added: ADDED_DATA };
  V.Verdict = Verdict;
  V.readKeys = readKeys;
  V.verify = verify;
})(globalThis);
