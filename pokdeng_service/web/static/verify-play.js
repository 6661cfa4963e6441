/* pokdeng's in-browser verifier, part 4: the checks of the play and its money (turns, hands, money,
   copies, balances), methods of part 3's BundleCheck: docs/audit.md ("Money", "Checking a bundle without
   pokdeng") and docs/rules.md sections 1, 3 and 5, check for check as docs/examples/worked_round.py. */
(function (root) {
  "use strict";
  const V = root.PokdengVerify;
  const R = V.rules;
  const { Failed, require } = V.core;
  const C = V.core;
  const { same, big, bySeat, repr, opt } = V.util;

  const NAMES = {
    round_opened: "open_round", bet_placed: "place_bet", client_seed_contributed: "contribute_seed",
    client_seed_fixed: "deal", cards_dealt: "deal", side_bet_placed: "place_side_bet",
    side_bets_settled: "close_side_bets", turn_timed_out: "time_out_turn", round_voided: "void_round",
  };
  const TIME = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.(\d{6}))?\+00:00$/;

  /** A time as stored (docs/audit.md, `timestamp`): Python's isoformat() of a UTC time that exists, with
      `.ffffff` only when the microseconds are not 0. */
  function storedTime(text) {
    const m = typeof text === "string" ? TIME.exec(text) : null;
    if (m === null || m[8] === "000000") return false;
    const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
    const moment = new Date(0);
    moment.setUTCFullYear(year, month - 1, day);
    moment.setUTCHours(hour, minute, second, 0);
    return year >= 1 && moment.getUTCFullYear() === year && moment.getUTCMonth() === month - 1 &&
      moment.getUTCDate() === day && moment.getUTCHours() === hour && moment.getUTCMinutes() === minute &&
      moment.getUTCSeconds() === second;
  }

  /** A restated field that differs: of a list its first differing element, of an object its members. */
  function difference(name, mine, theirs) {
    if (Array.isArray(mine) && Array.isArray(theirs)) {
      const at = mine.findIndex((x, i) => i >= theirs.length || C.canon(x) !== C.canon(theirs[i]));
      if (at >= 0 && at < theirs.length) return `${name}[${at}]`;
      return `${name} (${theirs.length} where the events give ${mine.length})`;
    }
    if (V.util.isObject(mine) && V.util.isObject(theirs)) {
      const keys = [...new Set([...Object.keys(mine), ...Object.keys(theirs)])].sort()
        .filter((k) => C.canon(opt(mine, k) ?? null) !== C.canon(opt(theirs, k) ?? null));
      return `${name} (${keys.map((k) => (k in mine ? k : `${k}: a member the events do not give`)).join(", ")})`;
    }
    return name;
  }

  Object.assign(V.BundleCheck.prototype, {
    turns() {
      const rules = this.rules;
      const actions = this.events.filter((e) => ["card_drawn", "player_stood", "turn_timed_out"].includes(e.kind));
      if (!rules.draw) {
        require(actions.length === 0, "nobody draws or chooses in this profile");
        return "no draws in this profile: the hands are compared at once";
      }
      const held = new Map();
      const poks = new Set();
      const acted = [];
      const revealed = new Set();
      let timedOut = null;
      for (const event of this.events) {
        const data = event.data;
        const where = `event ${event.position} (${event.kind})`;
        if (event.kind === "cards_dealt") {
          for (const [seat, text] of data.cards) {
            if (!held.has(seat)) held.set(seat, []);
            held.get(seat).push(text);
          }
        } else if (event.kind === "pok_declared") {
          poks.add(data.seat);
        } else if (event.kind === "turn_timed_out") {
          require(timedOut === null && ["draw", "stay"].includes(data.action), `${where}: a second timeout`);
          timedOut = [data.seat, data.action];
        } else if (event.kind === "card_drawn" || event.kind === "player_stood") {
          const seat = data.seat;
          const draws = event.kind === "card_drawn";
          require(held.has(seat) && !poks.has(seat) && !acted.includes(seat), `${where}: seat ${seat} may not act`);
          require(!acted.includes(0) && !revealed.has(seat), `${where}: after the banker played or the hand showed`);
          const [autoMax, choiceMax, timeoutMax] = rules.draw[seat ? 0 : 1];
          const t = R.taem(held.get(seat));
          if (timedOut !== null) {
            require(timedOut[0] === seat && timedOut[1] === (draws ? "draw" : "stay"), `${where}: not what the timeout said`);
            require(data.reason === "timeout" && draws === (t <= timeoutMax), `${where}: the timeout rule`);
          } else if (t <= autoMax || t > choiceMax) {
            const want = t <= autoMax ? "draw" : "stay";
            require(data.reason === "auto" && draws === (want === "draw"), `${where}: an automatic ${want}`);
          } else {
            require(data.reason === "choice", `${where}: taem ${t} is the hand's own choice`);
          }
          timedOut = null;
          acted.push(seat);
          if (draws) held.get(seat).push(data.card);
        } else if (event.kind === "hands_revealed") {
          const seats = [...data.seats];
          const sorted = [...new Set(seats)].sort(bySeat);
          require(same(seats, sorted) && !seats.some((s) => revealed.has(s)), `${where}: seats ${JSON.stringify(seats)}`);
          if (data.selective) {
            const [autoMax, choiceMax] = rules.draw[1];
            require(rules.reveal && !acted.includes(0), `${where}: no selective reveal here`);
            const t = R.taem(held.get(0));
            require(autoMax < t && t <= choiceMax, `${where}: the banker has no choice to make`);
          } else {
            const rest = [...held.keys()].filter((s) => s && !revealed.has(s)).sort(bySeat);
            require(same(seats, rest), `${where}: the showdown shows every hand not yet shown`);
          }
          for (const s of seats) revealed.add(s);
        }
      }
      const players = acted.filter((s) => s);
      const expected = [...held.keys()].filter((s) => s && !poks.has(s)).sort(bySeat);
      require(same(players, expected.slice(0, players.length)),
        `players acted in the order ${JSON.stringify(players)}, not ${JSON.stringify(expected)}`);
      if (this.first("round_settled") !== null) {
        const dealt = [...held.keys()].filter((s) => s);
        require(dealt.length === revealed.size && dealt.every((s) => revealed.has(s)), "not every hand was shown");
        if (poks.has(0)) require(acted.length === 0, "the banker's pok ends the round: nobody draws");
        else if (players.length < expected.length) {
          throw new Failed(`players acted in the order ${JSON.stringify(players)}, not ${JSON.stringify(expected)}`);
        }
      }
      return `${acted.length} action(s): players in seat order, then the banker, each by the draw rule`;
    },

    hands() {
      const rules = this.rules;
      const options = this.options;
      let shown = new Map();
      let count = 0;
      for (const event of this.events) {
        const data = event.data;
        if (event.kind === "hands_revealed") {
          shown = new Map(data.hands.map(([seat, cards]) => [seat, [...cards]]));
        } else if (event.kind === "bet_settled") {
          require(shown.has(data.seat) && shown.has(0), `event ${event.position}: settled before its hands were shown`);
          const player = new R.Hand(rules, options, shown.get(data.seat));
          const banker = new R.Hand(rules, options, shown.get(0));
          const want = R.expectedBet(rules, player, banker, data.stake);
          const where = `event ${event.position} (seat ${data.seat}, ${data.player})`;
          require(data.outcome === want.outcome, `${where}: ${data.outcome}, the hands say ${want.outcome}`);
          require(data.multiplier === String(want.multiplier),
            `${where}: multiplier ${data.multiplier}, the hands say ${want.multiplier}`);
          require(data.hand === player.label && data.banker_hand === banker.label,
            `${where}: hands ${repr(data.hand)} and ${repr(data.banker_hand)}, not ${repr(player.label)} and ${repr(banker.label)}`);
          count += 1;
        }
      }
      return `${count} stake(s): each outcome, multiplier and hand as docs/rules.md compares the hands`;
    },

    money() {
      const rules = this.rules;
      const opened = this.opening;
      const banker = opened.banker_player;
      const reserved = new Map(); // in the order wallets first reserve
      const nets = new Map();
      let bankerReserved = 0n;
      let bankerSum = 0n;
      let playerCommission = 0n;
      const stakes = new Map();
      const add = (map, key, amount) => map.set(key, (map.get(key) || 0n) + amount);
      const low = big(opened.min_stake), high = big(opened.max_stake);
      require(0n < low && low <= high, `round_opened: stake limits ${low}..${high}`);
      const even = rules.comparison !== "ante" || (low % 2n === 0n && high % 2n === 0n);
      require(even, `round_opened: ante limits must be even, not ${low}..${high}`);
      for (const event of this.events) {
        const data = event.data;
        const where = `event ${event.position} (${event.kind})`;
        if (event.kind === "bet_placed") {
          const stake = big(data.stake);
          require(stake > 0n && (rules.comparison !== "ante" || stake % 2n === 0n), `${where}: stake ${stake}`);
          require(big(opened.min_stake) <= stake && stake <= big(opened.max_stake), `${where}: outside the table's limits`);
          require(big(data.reserved) === stake * BigInt(rules.reserve), `${where}: reserves ${data.reserved}`);
          const want = banker ? stake * BigInt(rules.reserve) : 0n;
          require(big(data.banker_reserved) === want, `${where}: the banker reserves ${data.banker_reserved}`);
          add(reserved, data.player, big(data.reserved));
          bankerReserved += big(data.banker_reserved);
          const key = JSON.stringify([data.seat, data.player]);
          require(!stakes.has(key), `${where}: a second stake of one wallet on a seat`);
          stakes.set(key, stake);
        } else if (event.kind === "side_bet_placed") {
          const key = JSON.stringify([data.seat, data.player]);
          require(big(data.stake) === big(data.reserved) && stakes.get(key) === big(data.stake),
            `${where}: a side bet equals its main stake and reserves it`);
          add(reserved, data.player, big(data.reserved));
        } else if (event.kind === "side_bets_settled") {
          const dealt = this.first("cards_dealt");
          require(dealt !== null, `${where}: side bets settled before the deal`);
          const two = dealt.data.cards.filter(([seat]) => seat === 0).map(([, c]) => c);
          const natural = R.taem(two) >= 8;
          require(data.natural === natural, `${where}: natural is ${natural}`);
          for (const [, player, stake, net] of data.results) {
            const want = natural ? rules.side_bet.times(big(stake)) : -big(stake);
            require(big(net) === want, `${where}: the side bet of ${player} nets ${net}, not ${want}`);
            add(nets, player, big(net));
            bankerSum -= big(net);
          }
        } else if (event.kind === "bet_settled") {
          this.stakeArithmetic(rules, data, where);
          add(nets, data.player, big(data.net));
          bankerSum -= big(data.net) + big(data.commission);
          playerCommission += big(data.commission);
        }
      }
      const settled = this.first("round_settled");
      const voided = this.first("round_voided");
      const paid = this.all("bet_settled").map((e) => JSON.stringify([e.data.seat, e.data.player]));
      require(new Set(paid).size === paid.length && paid.every((k) => stakes.has(k)), "a stake settled twice, or one not placed");
      require(voided !== null || (paid.length === stakes.size), "a stake of the round was never settled");
      if (voided !== null) {
        const released = [...reserved.entries()].map(([p, r]) => [p, r]);
        if (bankerReserved) released.push([banker, bankerReserved]);
        require(same(voided.data.wallets.map((w) => [...w]), released), "the void does not release every reservation");
        return `voided: ${released.length} reservation(s) released, no money moved`;
      }
      const data = settled.data;
      let owed = 0n;
      const rate = rules.banker_commission;
      if (banker && rate && bankerSum > 0n) owed = rate.timesUp(bankerSum); // rounded up, on the round's net
      const wallets = [...reserved.entries()].map(([p, r]) => [p, r, nets.get(p) || 0n]);
      if (banker) wallets.push([banker, bankerReserved, bankerSum - owed]);
      const house = banker ? 0n : bankerSum;
      require(same(data.wallets.map((w) => [...w]), wallets),
        `round_settled's wallets, not ${JSON.stringify(wallets, (_k, v) => (typeof v === "bigint" ? Number(v) : v))}`);
      require(big(data.banker_net_before_commission) === bankerSum, `the banker's net before commission is ${bankerSum}`);
      require(big(data.banker_commission) === owed, `the banker's commission is ${owed}`);
      require(big(data.commission) === playerCommission + owed, `the commission is ${playerCommission + owed}`);
      require(big(data.house_net) === house, `the house net is ${house}`);
      const total = wallets.reduce((s, w) => s + w[2], 0n) + house + big(data.commission);
      require(total === 0n, `wallets + house + commission = ${total}`);
      return `every stake's payout, commission and net; wallets ${wallets.reduce((s, w) => s + w[2], 0n)} + house ${house} + commission ${data.commission} = 0`;
    },

    stakeArithmetic(rules, data, where) {
      const m = R.Frac.parse(data.multiplier);
      const [stake, gross, commission, net] = ["stake", "gross", "commission", "net"].map((k) => big(data[k]));
      require(m.n >= 0n && String(m) === data.multiplier, `${where}: multiplier ${repr(data.multiplier)}`);
      require(gross === m.times(stake), `${where}: gross ${gross} is not floor(${stake} x ${m})`);
      if (data.outcome === "player_wins") {
        const rate = rules.player_commission || R.F(0);
        const want = rate.timesUp(gross);
        require(commission === want, `${where}: commission ${commission} is not ceil(${gross} x ${rate}) = ${want}`);
        require(net === gross - commission, `${where}: net ${net} is not gross - commission`);
      } else if (data.outcome === "banker_wins") {
        require(commission === 0n && net === -gross, `${where}: a lost stake nets -gross, with no commission`);
      } else {
        require(data.outcome === "tie" && gross === 0n && commission === 0n && net === 0n, `${where}: a tie moves nothing`);
      }
      if (rules.comparison === "ante") {
        require(net === big(data.ante_net) + big(data.bet_net), `${where}: net is not ante_net + bet_net`);
        const halves = [big(data.ante_net), big(data.bet_net)].map((x) => (x < 0n ? -x : x));
        require(halves.every((x) => x === 0n || x === stake / 2n), `${where}: ante and bet are halves`);
      } else {
        require(data.ante_net === null && data.bet_net === null, `${where}: ante_net and bet_net are null`);
      }
    },

    // -- 3. what the bundle restates --------------------------------------------------------------
    async copies() {
      // every field the bundle restates, computed again from its events alone and compared whole, byte for byte
      // in canonical JSON: nothing in them can differ from the events, nor ride along
      for (const event of this.events) {
        require(storedTime(event.timestamp), `event ${event.position}: time ${repr(event.timestamp)} is not as stored`);
      }
      const again = await this.restated();
      const differ = Object.entries(again)
        .filter(([k, v]) => C.canon(v) !== C.canon(opt(this.plain, k) ?? null))
        .map(([k, v]) => difference(k, v, opt(this.plain, k) ?? null));
      require(differ.length === 0, `not what the events say: ${differ.join("; ")}`);
      return `table, round number, profile, engine, shuffle, ${again.decisions.length} decisions, payouts, settlement, `
        + "times and chain: each what the events say";
    },
    /** docs/audit.md, "Round bundle": what the bundle restates, from the events alone (its fields, and Decisions). */
    async restated() {
      const opened = this.opening;
      const rules = this.rules;
      const committed = this.first("shuffle_committed");
      require(committed !== null, "no shuffle_committed");
      const contributing = this.first("contributions_opened");
      const fixed = this.first("client_seed_fixed");
      const revealed = this.first("seed_revealed");
      const clientSeed = (fixed || committed).data.client_seed;
      const serverSeed = revealed !== null ? revealed.data.server_seed : "";
      const nonce = committed.data.nonce;
      let deck = []; // a seed revealed and a client seed fixed (at the deal, or given with the commitment): the shoe
      if (revealed !== null && (fixed !== null || contributing === null)) {
        deck = await C.shuffle(C.fromHex(serverSeed), clientSeed, nonce, rules.decks);
      }
      const shuffled = {
        algorithm: "pokdeng-shuffle-v1", commitment: committed.data.commitment, server_seed: serverSeed,
        client_seed: clientSeed, nonce, decks: rules.decks, deck_order: deck,
      };
      if (contributing !== null) { // as fixed at the deal, else each contributor's last, by the UTF-8 bytes of its id
        const latest = new Map();
        for (const event of this.all("client_seed_contributed")) latest.set(event.data.contributor, event.data.client_seed);
        const last = [...latest.entries()].map(([c, seed]) => [c, seed]).sort((p, q) => C.byCodePoints(p[0], q[0]));
        shuffled.client_seed_rule = contributing.data.rule;
        shuffled.contributions = fixed !== null ? fixed.data.contributions : last;
      }
      const settled = this.first("round_settled");
      return {
        table_id: opened.table_id,
        round_no: opened.round_no,
        profile: { name: opened.profile_name, version: opened.profile_version, options: this.options },
        engine_version: opened.engine_version,
        shuffle: shuffled,
        decisions: this.groups().map((group) => this.decisionOf(group)),
        payouts: this.all("bet_settled").map((e) => e.data),
        settlement: settled !== null ? settled.data : null,
        times: { opened: this.events[0].timestamp, closed: this.events[this.events.length - 1].timestamp },
        chain: {
          version: C.CHAIN_VERSION, genesis: await C.genesis(this.bundle.round_id),
          last: this.events[this.events.length - 1].digest,
        },
      };
    },
    /** docs/audit.md, "Decisions": the command a group of events records, with exactly its fields. */
    decisionOf(group) {
      const head = group[0];
      const name = this.commandOf(group);
      const { kind, data } = head;
      let by = opt(data, "by") ?? "";
      let fields = {};
      if (kind === "round_opened") {
        const rest = group.slice(1);
        const rule = rest.length && rest[0].kind === "contributions_opened" ? rest.shift().data.rule : "";
        require(rest.length > 0 && rest[0].kind === "shuffle_committed", `event ${head.position}: no commitment`);
        const committed = rest[0].data;
        let clientSeed = committed.client_seed;
        if (rule) { // the platform's contribution right after the commitment, if any
          const after = rest.length > 1 ? rest[1] : null;
          const platform = after !== null && after.kind === "client_seed_contributed" && after.data.contributor === "";
          clientSeed = platform ? after.data.client_seed : "";
        }
        const options = [...data.profile_options].map((pair) => [...pair]).sort((p, q) => C.byCodePoints(p[0], q[0]))
          .filter(([, on]) => on).map(([option]) => `+${option}`).join("");
        for (const k of ["round_id", "table_id", "round_no", "seats", "banker_player", "min_stake", "max_stake"]) {
          fields[k] = data[k];
        }
        fields.profile = `${data.profile_name}@${data.profile_version}${options}`;
        for (const k of ["commitment", "nonce", "algorithm"]) fields[k] = committed[k];
        fields.client_seed = clientSeed;
        if (rule) fields.client_seed_rule = rule;
        const currency = opt(data, "currency") ?? "THB";
        if (currency !== "THB") fields.currency = currency;
      } else {
        const opened = this.opening;
        const banker = opened.banker_player;
        const holders = new Map(opened.seats.map(([seat, holder]) => [seat, holder]));
        if (kind === "bet_placed") {
          fields = { seat: data.seat, player: data.player, stake: data.stake, available: data.reserved,
            banker_available: banker ? data.banker_reserved : null };
          const next = group.length > 1 ? group[1] : null;
          if (next !== null && next.kind === "client_seed_contributed" && next.data.contributor === data.player) {
            fields.client_seed = next.data.client_seed;
          }
        } else if (kind === "client_seed_contributed") {
          fields = { player: data.contributor === "" ? null : data.contributor, client_seed: data.client_seed };
        } else if (kind === "client_seed_fixed") { // the deal of a round with contributions: its sender on its cards_dealt
          const dealt = group.slice(1).find((e) => e.kind === "cards_dealt");
          by = dealt !== undefined ? (opt(dealt.data, "by") ?? "") : "";
        } else if (kind === "card_drawn" || kind === "player_stood") {
          require(data.seat === 0 || holders.has(data.seat), `event ${head.position}: seat ${data.seat} is not the round's`);
          fields = data.seat === 0 ? { player: banker } : { seat: data.seat, player: holders.get(data.seat) || "" };
        } else if (kind === "side_bet_placed") {
          fields = { seat: data.seat, player: data.player, available: data.reserved };
        } else if (kind === "round_voided") {
          fields = { reason: data.reason };
        } else if (kind === "hands_revealed") { // (selective: a banker_reveal)
          fields = { seats: data.seats, player: banker };
        }
      }
      if (by) fields.by = by;
      return { command: name, name, ...fields };
    },
    groups() {
      const groups = [];
      for (const event of this.events) {
        const last = groups[groups.length - 1];
        if (last && last[0].command_id === event.command_id) last.push(event);
        else groups.push([event]);
      }
      return groups;
    },
    commandOf(group) {
      const { kind, data } = group[0];
      if (kind === "card_drawn" || kind === "player_stood") {
        return (data.seat === 0 ? "banker_" : "") + (kind === "card_drawn" ? "draw" : "stay");
      }
      if (kind === "hands_revealed" && data.selective) return "banker_reveal";
      require(kind in NAMES, `event ${group[0].position} (${kind}) starts no command`);
      return NAMES[kind];
    },
    /** docs/audit.md, `balances` and `made_for`: each listed wallet once, with its settlement net and `after -
        before = net` (or both null: the platform's wallets); made for the operator or an auditor, every wallet of the
        settlement in its order; made for `player:X` (a seat's holder, a bettor or the banker), X's alone (none if X
        has no net). A version 1 bundle says nothing of whom it was made for. */
    balances() {
      const settled = this.first("round_settled");
      const wallets = settled ? settled.data.wallets.map(([p, , n]) => [p, n]) : [];
      const nets = new Map(wallets);
      const seen = new Set();
      for (const entry of this.bundle.balances) {
        const { wallet, before, after } = entry;
        require(nets.has(wallet) && !seen.has(wallet), `wallet ${repr(wallet)} has no (single) net in the settlement`);
        require(same(entry.net, nets.get(wallet)) && (before === null) === (after === null),
          `wallet ${wallet}: net ${entry.net}, the settlement's is ${nets.get(wallet)}`);
        require(before === null || big(after) - big(before) === big(entry.net), `wallet ${wallet}: after - before != net`);
        seen.add(wallet);
      }
      const nulls = new Set(this.bundle.balances.map((entry) => entry.before === null));
      require(nulls.size <= 1, "some balances are null and others not");
      const listed = this.bundle.balances.map((entry) => entry.wallet);
      if (this.bundle.format_version === 1) {
        return `${seen.size} wallet(s): after = before + the round's net (version 1: made for anyone)`;
      }
      const madeFor = this.bundle.made_for;
      let expected;
      if (madeFor.startsWith("player:")) {
        const player = madeFor.slice("player:".length);
        const opened = this.opening;
        const people = new Set(opened.seats.map(([, holder]) => holder).filter((holder) => holder));
        people.add(opened.banker_player);
        for (const e of [...this.all("bet_placed"), ...this.all("side_bet_placed")]) people.add(e.data.player);
        require(people.has(player), `made for player ${repr(player)}, who takes no part in the round`);
        expected = nets.has(player) ? [player] : [];
      } else {
        expected = wallets.map(([wallet]) => wallet);
      }
      require(same(listed, expected),
        `made for ${madeFor}: balances of ${JSON.stringify(listed)}, the settlement gives ${JSON.stringify(expected)}`);
      return `made for ${madeFor}: ${seen.size} wallet(s), each after = before + the round's net`;
    },

    /** docs/audit.md, `platform_transactions` (a round on a platform's wallets), in order: each transaction's fields,
        its id the deterministic one (`<round>:<purpose>:<seat>:<bettor>:<n>`, n its stake's earlier debits in the
        list; `<round>:credit:<player>`), the round's currency, of the bundle's audience; each wallet's accepted
        debits sum to what the round reserves for it; a settled round credits each wallet reserved + net for exactly
        its accepted debits, nobody else, and rolls back no placed stake; a voided round credits nobody and rolls back
        every accepted debit; nothing is left open. As docs/examples/worked_round.py. */
    platformTransactions() {
      const roundId = this.bundle.round_id;
      const txs = this.bundle.platform_transactions;
      const opened = this.opening;
      const currency = opt(opened, "currency") ?? "THB";
      const banker = opened.banker_player;
      const closed = this.first("round_closed");
      const outcome = closed ? closed.data.outcome : "";
      require(outcome === "settled" || outcome === "voided", `the round is not closed settled or voided (${outcome})`);
      const settled = this.first("round_settled");
      const voided = this.first("round_voided");
      const reserved = new Map();
      const nets = new Map();
      if (settled) {
        for (const [p, held, net] of settled.data.wallets) { reserved.set(p, big(held)); nets.set(p, big(net)); }
      } else if (voided) {
        for (const [p, held] of voided.data.wallets) reserved.set(p, big(held));
      }
      const madeFor = this.bundle.made_for;
      const player = madeFor.startsWith("player:") ? madeFor.slice("player:".length) : null;
      const ids = new Set();
      const attempts = new Map();
      const accepted = new Map();
      const UNDONE = ["rollback_requested", "rolled_back"];
      txs.forEach((tx, i) => {
        const { tx_id: txId, kind, player: who, status } = tx;
        const where = `transaction ${i} (${txId})`;
        require(!ids.has(txId), `${where}: its id appears twice`);
        ids.add(txId);
        require(big(tx.amount) >= 0n, `${where}: a negative amount`);
        require(tx.currency === currency, `${where}: currency ${tx.currency}, the round's is ${currency}`);
        require(player === null || who === player, `${where}: of ${repr(who)}, in a bundle made for ${madeFor}`);
        if (kind === "debit") {
          const { purpose, seat, bettor } = tx;
          require(["bet", "cover", "side"].includes(purpose) && seat !== null && bettor !== null && tx.debits.length === 0,
            `${where}: a debit is of purpose bet, cover or side, with a seat and a bettor, no debits`);
          const key = JSON.stringify([purpose, String(seat), bettor]);
          const n = attempts.get(key) ?? 0;
          attempts.set(key, n + 1);
          const want = `${roundId}:${purpose}:${seat}:${bettor}:${n}`;
          require(txId === want, `${where}: not the deterministic id ${want}`);
          const owner = purpose === "cover" ? banker : bettor;
          require(who === owner, `${where}: a ${purpose} debit of ${repr(who)}, where the stake's is ${repr(owner)}`);
          require(["requested", "accepted", "refused", ...UNDONE].includes(status), `${where}: status ${repr(status)} is not a debit's`);
          require(UNDONE.includes(status) || tx.accepted === (status === "accepted"), `${where}: accepted with status ${status}`);
          if (tx.accepted) {
            if (!accepted.has(who)) accepted.set(who, []);
            accepted.get(who).push(txId);
          }
        } else {
          require(kind === "credit", `${where}: kind ${repr(kind)} is neither debit nor credit`);
          require(tx.purpose === "credit" && tx.seat === null && tx.bettor === null && tx.accepted === false,
            `${where}: a credit is of purpose credit, with no seat, no bettor, not accepted`);
          require(txId === `${roundId}:credit:${who}`, `${where}: not the deterministic id`);
          require(["requested", "applied", "refused"].includes(status), `${where}: status ${repr(status)} is not a credit's`);
        }
      });
      const audience = [...reserved.keys()].filter((p) => reserved.get(p) !== 0n && (player === null || p === player));
      const placed = new Map();
      for (const t of txs) {
        if (t.kind === "debit" && t.accepted) placed.set(t.player, (placed.get(t.player) ?? 0n) + big(t.amount));
      }
      const sums = (m) => JSON.stringify([...m.entries()].map(([p, a]) => [p, String(a)]).sort());
      const wanted = new Map(audience.map((p) => [p, reserved.get(p)]));
      require(sums(placed) === sums(wanted), `the accepted debits ${sums(placed)} are not the round's stakes ${sums(wanted)}`);
      const credits = new Map(txs.filter((t) => t.kind === "credit").map((t) => [t.player, t]));
      const placedTxs = txs.filter((t) => t.kind === "debit" && t.accepted);
      if (outcome === "settled") {
        for (const p of audience) {
          const credit = credits.get(p);
          credits.delete(p);
          const pays = reserved.get(p) + (nets.get(p) ?? 0n);
          require(credit !== undefined && big(credit.amount) === pays, `${p}: no credit of reserved + net = ${pays}`);
          require(same([...credit.debits], accepted.get(p) ?? []), `the credit to ${p} settles other debits than its own, in order`);
        }
        require(credits.size === 0, `credits to ${JSON.stringify([...credits.keys()].sort())}, whom the settlement does not pay`);
        require(placedTxs.every((t) => t.status === "accepted"), "a settled round rolls back a placed stake");
      } else {
        require(credits.size === 0, `credits to ${JSON.stringify([...credits.keys()].sort())} in a voided round`);
        const kept = placedTxs.filter((t) => !UNDONE.includes(t.status)).map((t) => t.tx_id);
        require(kept.length === 0, `the void leaves debits ${JSON.stringify(kept)} in force`);
      }
      for (const t of txs) {
        const unfinished = ["requested", "rollback_requested"].includes(t.status) || (t.kind === "credit" && t.status === "refused");
        require(!unfinished || t.resolved !== "", `transaction ${t.tx_id} is ${t.status} in a closed round`);
        require(t.resolved === "" || unfinished, `transaction ${t.tx_id} is ${t.status}: nothing to resolve`);
      }
      const debits = txs.filter((t) => t.kind === "debit").length;
      return `${debits} debits and ${txs.length - debits} credits of ${madeFor}: as the round's stakes and ${outcome}`;
    },
  });
})(globalThis);
