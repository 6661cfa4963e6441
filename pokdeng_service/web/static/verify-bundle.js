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
      this.unanchored = ""; // why nothing checked anchors the bundle
    }
    add(name, ok, detail) {
      this.checks.push({ name, ok, detail });
      return ok;
    }
    /** Every check passed (an unanchored bundle's too: `status` tells them apart). */
    get ok() {
      return this.checks.length > 0 && this.checks.every((c) => c.ok);
    }
    /** docs/audit.md, "Verdicts and exit codes": FAIL if a check failed; else UNANCHORED if no signed tree head
        was checked to cover the round (no key given, or no head in the bundle); else PASS. */
    get status() {
      return !this.ok ? "FAIL" : this.unanchored ? "UNANCHORED" : "PASS";
    }
    leaveUnanchored(why) {
      this.unanchored = why;
      this.warnings.push(why);
    }
    get failed() {
      return this.checks.filter((c) => !c.ok).map((c) => c.name);
    }
    render() {
      const lines = [`${this.status}  ${this.subject}`];
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

  // the documented form (docs/audit.md, "Round bundle" and "Types"; docs/events.md; docs/checkpoints.md). A type:
  // "int" (a JSON integer, |n| < 2^53, not true or false), "text", "bool", "hex16"/"hex64"/"hex128" (that many
  // lowercase hex digits), "sender", "version", "currency", "recipient" (texts of a grammar); a name ending in "?"
  // also allows null; {tuple: [...]} an array of exactly those; [T] an array of T; an object exactly those
  // members (null: any value, compared whole by `copies`).
  const tuple = (...items) => ({ tuple: items });
  const EVENT_TYPES = { position: "int", kind: "text", data: null, command_id: "text", timestamp: "text", digest: "hex64" };
  const BALANCE_TYPES = { wallet: "text", before: "int?", after: "int?", net: "int" };
  const HEAD_TYPES = { format: "text", format_version: "int", log_id: "text", key_id: "hex16", tree_size: "int",
    root_hash: "hex64", timestamp: "int", signature: "hex128" };
  const LOG_TYPES = { index: "int", leaf: "hex64", path: ["hex64"], head: HEAD_TYPES };
  const INCLUSION_TYPES = { table_id: "text", root: "hex64", size: "int", index: "int", leaf: "hex64", path: ["hex64"] };
  const TX_TYPES = { tx_id: "text", kind: "text", player: "text", amount: "int", currency: "currency", purpose: "text",
    seat: "int?", bettor: "text?", status: "text", accepted: "bool", debits: ["text"], resolved: "text" };
  const MEMBERS_V1 = { format: "text", format_version: "int", round_id: "text", table_id: "text", round_no: "int",
    profile: null, engine_version: "version", shuffle: null, decisions: null, payouts: null, settlement: null,
    balances: [BALANCE_TYPES], times: null, events: [EVENT_TYPES], chain: null, inclusion: null, log: null,
    bundle_digest: "hex64" };
  const VERSIONS = {
    // platform_transactions: present exactly when the round's money is a platform's (docs/wallet.md)
    2: { members: { ...MEMBERS_V1, made_for: "recipient", platform_transactions: [TX_TYPES] },
      optional: ["platform_transactions"], inclusion: INCLUSION_TYPES },
    1: { members: MEMBERS_V1, optional: ["inclusion", "log"], // absent from version 1 bundles made before them
      inclusion: { ...INCLUSION_TYPES, period: "text", checkpoint_position: "int", checkpoint_digest: "hex64" } },
  };
  /** § Senders: "", "operator", "operator:" NAME or "service:" NAME (NAME: one character or more). */
  const sender = (text) => text === "" || text === "operator" ||
    ["operator:", "service:"].some((prefix) => text.startsWith(prefix) && text.length > prefix.length);
  const GRAMMARS = {
    sender,
    version: (text) => /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/.test(text),
    currency: (text) => /^[A-Z]{3}$/.test(text),
    recipient: (text) => text === "operator" || text === "auditor" || (text.startsWith("player:") && text.length > 7),
    hex16: (text) => /^[0-9a-f]{16}$/.test(text),
    hex64: (text) => /^[0-9a-f]{64}$/.test(text),
    hex128: (text) => /^[0-9a-f]{128}$/.test(text),
  };
  /** § Types: what makes `value` not of type `spec`, or null. */
  function typeProblem(value, spec, where) {
    if (spec === null) return null;
    if (typeof spec === "string") {
      if (spec.endsWith("?")) return value === null ? null : typeProblem(value, spec.slice(0, -1), where);
      let ok;
      if (spec === "int") ok = typeof value === "number" && Number.isInteger(value) && Math.abs(value) < 2 ** 53;
      else if (spec === "bool") ok = typeof value === "boolean";
      else ok = typeof value === "string" && (spec === "text" || GRAMMARS[spec](value));
      return ok ? null : `${where}: ${JSON.stringify(value)} is not of type ${spec}`;
    }
    if (Array.isArray(spec)) {
      if (!Array.isArray(value)) return `${where}: not an array`;
      for (let i = 0; i < value.length; i++) {
        const problem = typeProblem(value[i], spec[0], `${where}[${i}]`);
        if (problem) return problem;
      }
      return null;
    }
    if (spec.tuple) {
      if (!Array.isArray(value) || value.length !== spec.tuple.length) return `${where}: not an array of ${spec.tuple.length}`;
      for (let i = 0; i < value.length; i++) {
        const problem = typeProblem(value[i], spec.tuple[i], `${where}[${i}]`);
        if (problem) return problem;
      }
      return null;
    }
    return membersProblem(value, spec, where);
  }
  /** An object with exactly the members of `spec` (those of `optional` may be absent), each of its type. */
  function membersProblem(value, spec, where, optional = []) {
    if (!isObject(value)) return `${where}: not an object`;
    const extra = Object.keys(value).filter((k) => !has(spec, k)).sort();
    const lacking = Object.keys(spec).filter((k) => !has(value, k) && !optional.includes(k)).sort();
    if (extra.length) return `${where}: members ${JSON.stringify(extra)} that docs/audit.md does not list`;
    if (lacking.length) return `${where}: without ${JSON.stringify(lacking)}`;
    for (const [k, t] of Object.entries(spec)) {
      if (!has(value, k)) continue;
      const problem = typeProblem(value[k], t, `${where}.${k}`);
      if (problem) return problem;
    }
    return null;
  }
  const KINDS = ["bet_placed", "bet_settled", "card_drawn", "cards_dealt", "client_seed_contributed",
    "client_seed_fixed", "contributions_opened", "hands_revealed", "player_stood", "pok_declared", "round_closed",
    "round_opened", "round_settled", "round_voided", "seed_revealed", "shuffle_committed", "side_bet_placed",
    "side_bet_window_opened", "side_bets_settled", "turn_timed_out"];
  const SENT_BY_OPERATOR = ["round_opened", "cards_dealt", "side_bets_settled", "turn_timed_out", "round_voided"];
  // each kind's data members and their types (docs/events.md, "Round stream"; docs/audit.md, "Types"): exactly
  // these; those of ADDED_DATA were added after rounds were recorded without them, which lack them (read as "" and
  // THB): a record may leave them out
  const EVENT_DATA_TYPES = {
    round_opened: { round_id: "text", table_id: "text", round_no: "int", profile_name: "text", profile_version: "int",
      profile_options: [tuple("text", "bool")], engine_version: "version", banker_player: "text?",
      seats: [tuple("int", "text?")], min_stake: "int", max_stake: "int", currency: "currency", by: "sender" },
    contributions_opened: { rule: "text" },
    shuffle_committed: { commitment: "hex64", client_seed: "text", nonce: "int", algorithm: "text", shoe_size: "int" },
    client_seed_contributed: { contributor: "text", client_seed: "text", by: "sender" },
    bet_placed: { seat: "int", player: "text", stake: "int", reserved: "int", banker_reserved: "int", by: "sender" },
    client_seed_fixed: { client_seed: "hex64", rule: "text", contributions: [tuple("text", "text")] },
    cards_dealt: { cards: [tuple("int", "text")], banker_up_card: "text?", by: "sender" },
    pok_declared: { seat: "int", cards: ["text"], taem: "int", label: "text" },
    side_bet_window_opened: { up_card: "text" },
    side_bet_placed: { seat: "int", player: "text", stake: "int", reserved: "int", by: "sender" },
    side_bets_settled: { natural: "bool", results: [tuple("int", "text", "int", "int")], by: "sender" },
    turn_timed_out: { seat: "int", action: "text", by: "sender" },
    card_drawn: { seat: "int", card: "text", reason: "text", by: "sender" },
    player_stood: { seat: "int", reason: "text", by: "sender" },
    hands_revealed: { seats: ["int"], hands: [tuple("int", ["text"])], selective: "bool", by: "sender" },
    bet_settled: { seat: "int", player: "text", stake: "int", outcome: "text", multiplier: "text", gross: "int",
      commission: "int", net: "int", hand: "text", banker_hand: "text", ante_net: "int?", bet_net: "int?" },
    round_settled: { wallets: [tuple("text", "int", "int")], banker_net_before_commission: "int",
      banker_commission: "int", commission: "int", house_net: "int" },
    round_voided: { reason: "text", wallets: [tuple("text", "int")], by: "sender" },
    seed_revealed: { server_seed: "hex64" },
    round_closed: { outcome: "text" },
  };
  const EVENT_DATA = Object.fromEntries(Object.entries(EVENT_DATA_TYPES).map(([kind, t]) => [kind, Object.keys(t)]));
  const ADDED_DATA = (kind) => (kind === "round_opened" ? ["currency", "by"] : EVENT_DATA[kind].includes("by") ? ["by"] : []);

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
      if (has(parsed, "platform_transactions")) {
        await check(verdict, "platform transactions", () => this.platformTransactions());
        const txs = Array.isArray(parsed.platform_transactions) ? parsed.platform_transactions : [];
        for (const tx of txs.filter((t) => isObject(t) && opt(t, "resolved"))) {
          verdict.warnings.push(`platform transaction ${tx.tx_id}: resolved by an operator, not checked`);
        }
      } else if (Array.isArray(opt(parsed, "balances")) && parsed.balances.some((b) => isObject(b) && opt(b, "before") === null)) {
        verdict.warnings.push("its balances are a platform's and it carries no platform_transactions: its money is not checked");
      }
      if (opt(parsed, "inclusion") !== undefined && parsed.inclusion !== null) {
        await check(verdict, "inclusion", () => this.inclusion());
      }
      try {
        await this.anchor(verdict);
      } catch (error) {
        verdict.add("log inclusion", false, `missing or malformed field: ${error && error.message}`);
      }
      if (opt(parsed, "format_version") === 1) {
        verdict.warnings.push("format version 1: its balances may leave wallets out (it does not say whom it was made " +
          "for) and its checkpoint's period, position and digest are not checked (nothing offline can)");
      }
      return verdict;
    }

    // -- 1. the file ------------------------------------------------------------------------------
    form() {
      const b = this.plain;
      const version = opt(b, "format_version");
      require(opt(b, "format") === "pokdeng-round-bundle" && (version === 1 || version === 2),
        "not a pokdeng-round-bundle of format_version 1 or 2");
      // exactly the documented members, each of its type: nothing may ride along that no check reads (docs/audit.md)
      const form = VERSIONS[version];
      let problem = membersProblem(b, form.members, "bundle", form.optional);
      require(problem === null, problem);
      for (const event of b.events) {
        const where = `event ${event.position} (${event.kind})`;
        require(KINDS.includes(event.kind), `event ${event.position}: kind ${repr(event.kind)} is not a round's`);
        require(event.position >= 2, `${where}: the stream's creation (position 1) is not in a bundle`);
        problem = membersProblem(event.data, EVENT_DATA_TYPES[event.kind], `${where} data`, ADDED_DATA(event.kind));
        require(problem === null, problem);
      }
      if (has(b, "platform_transactions")) {
        require(b.balances.every((entry) => entry.before === null),
          "platform_transactions in a bundle whose balances are the store's (not null)");
      }
      const inclusion = opt(b, "inclusion");
      if (inclusion != null) {
        problem = membersProblem(inclusion, form.inclusion, "inclusion");
        require(problem === null, problem);
      }
      const log = opt(b, "log");
      if (log != null) {
        problem = membersProblem(log, LOG_TYPES, "log");
        require(problem === null, problem);
      }
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
      require(GRAMMARS.version(opened.engine_version), `engine version ${repr(opened.engine_version)}`);
      require(GRAMMARS.currency(opt(opened, "currency") ?? "THB"), `currency ${repr(opt(opened, "currency"))}`);
      this.senders();
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

    /** § Senders (docs/events.md, "Who sent a command"): of every `by` present (records made before senders were
        named have none), its grammar; "" on an event that is not its command's first, on a draw or stay of reason
        auto or timeout and on the showdown; never "" on the operator-only commands' events, the platform's
        ContributeSeed and the choices made for the house's hand (banker_player null). */
    senders() {
      const banker = this.opening.banker_player;
      for (const group of this.groups()) {
        group.forEach((event, index) => {
          const { kind, data } = event;
          if (!has(data, "by")) return;
          const by = data.by;
          const where = `event ${event.position} (${kind})`;
          require(sender(by), `${where}: sender ${repr(by)} is not '', operator, operator:NAME or service:NAME`);
          const automatic = index > 0 || ["auto", "timeout"].includes(opt(data, "reason")) || opt(data, "selective") === false;
          if (automatic && !SENT_BY_OPERATOR.includes(kind)) {
            require(by === "", `${where}: sender ${repr(by)} on an automatic event (its command's is its first's)`);
            return;
          }
          const platform = kind === "client_seed_contributed" && data.contributor === "";
          const house = banker === null &&
            (((kind === "card_drawn" || kind === "player_stood") && data.seat === 0) || kind === "hands_revealed");
          require(by !== "" || !(SENT_BY_OPERATOR.includes(kind) || platform || house),
            `${where}: ${house ? "the house" : "an operator"}'s command names its sender (by)`);
        });
      }
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
      return `leaf ${proof.index} of ${proof.size} under root ${proof.root}`;
    }

    async anchor(verdict) {
      const anchor = opt(this.plain, "log") === undefined ? null : this.bundle.log;
      if (anchor === null) {
        const text = "unanchored: no signed tree head covers this round";
        if (this.keys.size) verdict.add("anchor", false, text);
        else verdict.leaveUnanchored(text);
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
        verdict.leaveUnanchored(`unanchored: the signature of key ${head.key_id} was not checked (give the operator's public key)`);
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
        verdict.leaveUnanchored(`unanchored: ${unsupported}, so the signature of key ${head.key_id} was not checked`);
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
