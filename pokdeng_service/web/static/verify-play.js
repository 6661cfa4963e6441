/* pokdeng's in-browser verifier, part 4: the checks of the play and its money (turns, hands, money,
   copies, balances), methods of part 3's BundleCheck: docs/audit.md ("Money", "Checking a bundle without
   pokdeng") and docs/rules.md sections 1, 3 and 5, check for check as docs/examples/worked_round.py. */
(function (root) {
  "use strict";
  const V = root.PokdengVerify;
  const R = V.rules;
  const { Failed, require } = V.core;
  const { same, big, bySeat, repr } = V.util;

  const NAMES = {
    round_opened: "open_round", bet_placed: "place_bet", client_seed_contributed: "contribute_seed",
    client_seed_fixed: "deal", cards_dealt: "deal", side_bet_placed: "place_side_bet",
    side_bets_settled: "close_side_bets", turn_timed_out: "time_out_turn", round_voided: "void_round",
  };
  const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$/;

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
    copies() {
      const b = this.bundle;
      const opened = this.opening;
      const profile = { name: opened.profile_name, version: opened.profile_version, options: this.options };
      require(same(b.profile, profile), `profile ${JSON.stringify(b.profile)} is not the opening's ${JSON.stringify(profile)}`);
      require(b.engine_version === opened.engine_version, "engine_version is not the opening's");
      require(same(b.payouts, this.all("bet_settled").map((e) => e.data)), "payouts are not the bet_settled events");
      const settled = this.first("round_settled");
      require(same(b.settlement, settled ? settled.data : null), "settlement is not round_settled");
      const times = { opened: this.events[0].timestamp, closed: this.events[this.events.length - 1].timestamp };
      require(same(b.times, times), "times are not the first and last events' times");
      for (const event of this.events) {
        require(typeof event.timestamp === "string" && TIME.test(event.timestamp),
          `event ${event.position}: time ${repr(event.timestamp)} is not ISO 8601 UTC`);
      }
      const names = this.groups().map((group) => this.commandOf(group));
      require(same(b.decisions.map((d) => d.command), names), `decisions are not the commands ${JSON.stringify(names)}`);
      return `profile, engine, payouts, settlement, times and ${names.length} decisions as the events say`;
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
    balances() {
      const settled = this.first("round_settled");
      const nets = new Map(settled ? settled.data.wallets.map(([p, , n]) => [p, n]) : []);
      const seen = new Set();
      for (const entry of this.bundle.balances) {
        const wallet = entry.wallet;
        require(nets.has(wallet) && !seen.has(wallet), `wallet ${repr(wallet)} has no (single) net in the settlement`);
        require(same(entry.net, nets.get(wallet)) && big(entry.after) - big(entry.before) === big(entry.net),
          `wallet ${wallet}: before ${entry.before} + net ${nets.get(wallet)} != after ${entry.after}`);
        seen.add(wallet);
      }
      return `${seen.size} wallet(s): after = before + the round's net`;
    },
  });
})(globalThis);
