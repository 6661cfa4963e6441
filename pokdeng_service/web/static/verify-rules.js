/* pokdeng's in-browser verifier, part 2: hands and payouts, written from docs/rules.md sections 1
   and 3 (what a bet_settled must say) and docs/audit.md ("Money"). Money is exact: BigInt, and
   multipliers are exact fractions. */
(function (root) {
  "use strict";
  const V = (root.PokdengVerify = root.PokdengVerify || {});
  const { Failed } = V.core;

  // exact fractions over BigInt, written as Python's Fraction writes them ("19/20", "2", "0")
  function gcd(a, b) {
    a = a < 0n ? -a : a;
    b = b < 0n ? -b : b;
    while (b) [a, b] = [b, a % b];
    return a;
  }
  class Frac {
    constructor(n, d = 1n) {
      n = BigInt(n);
      d = BigInt(d);
      if (d === 0n) throw new Failed("a fraction with denominator 0");
      if (d < 0n) [n, d] = [-n, -d];
      const g = gcd(n, d) || 1n;
      this.n = n / g;
      this.d = d / g;
    }
    static parse(text) {
      const m = /^(-?\d+)(?:\/(\d+))?$/.exec(String(text));
      if (!m) throw new Failed(`not a fraction: ${JSON.stringify(text)}`);
      return new Frac(BigInt(m[1]), BigInt(m[2] || "1"));
    }
    toString() {
      return this.d === 1n ? String(this.n) : `${this.n}/${this.d}`;
    }
    cmp(other) {
      const a = this.n * other.d;
      const b = other.n * this.d;
      return a < b ? -1 : a > b ? 1 : 0;
    }
    /** floor(amount × this) for amount ≥ 0 */
    times(amount) {
      return (BigInt(amount) * this.n) / this.d;
    }
    /** ceil(amount × this) for amount ≥ 0 */
    timesUp(amount) {
      return (BigInt(amount) * this.n + this.d - 1n) / this.d;
    }
  }
  const F = (n, d = 1) => new Frac(BigInt(n), BigInt(d));
  const maxFrac = (a, b) => (a.cmp(b) >= 0 ? a : b);

  // cards: rank value 2..14 (A high), suit value: diamonds < clubs < hearts < spades
  const RANK_VALUE = { J: 11, Q: 12, K: 13, A: 14 };
  for (let n = 2; n <= 10; n++) RANK_VALUE[String(n)] = n;
  const SUIT_VALUE = { D: 0, C: 1, H: 2, S: 3 };
  const KIND_ORDER = { pok: 6, tong: 5, straight_flush: 4, straight: 3, sam_lueang: 2, normal: 1 };
  const ANTE_NAMES = { 75: "AK flush", 74: "special pair", 73: "face-card combination", 72: "10 and face card", 71: "zero flush" };

  function card(text) {
    if (typeof text !== "string") throw new Failed(`not a card: ${JSON.stringify(text)}`);
    const rank = text.slice(0, -1);
    const suit = text.slice(-1);
    if (!(rank in RANK_VALUE) || !(suit in SUIT_VALUE)) throw new Failed(`not a card: ${JSON.stringify(text)}`);
    return [RANK_VALUE[rank], SUIT_VALUE[suit]];
  }
  const points = (text) => {
    const rank = card(text)[0];
    return rank === 14 ? 1 : rank >= 10 ? 0 : rank;
  };
  const taem = (cards) => cards.reduce((sum, c) => sum + points(c), 0) % 10;
  const flush = (cards) => new Set(cards.map((c) => card(c)[1])).size === 1;
  const pair = (cards) => cards.length === 2 && card(cards[0])[0] === card(cards[1])[0];
  function deng(cards) {
    if (cards.length === 2) return pair(cards) || flush(cards) ? 2 : 1;
    return flush(cards) ? 3 : 1;
  }
  function handKind(cards, straights, aceLow) {
    if (cards.length === 2) return taem(cards) >= 8 ? "pok" : "normal";
    const ranks = cards.map((c) => card(c)[0]);
    if (new Set(ranks).size === 1) return "tong";
    if (straights) {
      const values = ranks.map((r) => (aceLow && r === 14 ? 1 : r)).sort((a, b) => a - b);
      if (values[0] + 1 === values[1] && values[1] + 1 === values[2]) return flush(cards) ? "straight_flush" : "straight";
    }
    if (ranks.every((r) => r >= 11 && r <= 13)) return "sam_lueang";
    return "normal";
  }
  /** lexicographic order of two arrays of numbers */
  function cmpKeys(a, b) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
    return a.length - b.length;
  }

  // docs/rules.md section 3: each profile's deck count, comparison, reservation, commissions, multipliers
  // and draw rules (auto_max, choice_max, timeout_draw_max) for the players and the banker.
  const CHOICE = [-1, 9, 3];
  const AUTO_LOW = [3, 7, 3];
  const PROFILES = {
    "classic@1": { decks: 1, comparison: "classic", reserve: 5, draw: [CHOICE, CHOICE], reveal: true },
    "ante@1": { decks: 8, comparison: "ante", reserve: 1 },
    "room@1": {
      decks: 1, comparison: "ranked", reserve: 5, draw: [AUTO_LOW, AUTO_LOW], reveal: true,
      player_commission: F(3, 100), banker_commission: F(3, 100), multipliers: { pok: F(1), taem: F(1) },
    },
    "kingmaker@1": {
      decks: 1, comparison: "ranked", reserve: 5, multipliers: { pok: F(19, 20), taem: F(19, 20) },
      draw: [AUTO_LOW, [5, 5, 5]], reveal: false, sam_lueang_by_ranks: true, loss_floor: F(1), side_bet: F(6, 5),
    },
  };
  const RANKED_MULTIPLIERS = {
    pok_deng: F(2), tong: F(5), straight_flush: F(5), straight: F(3), sam_lueang: F(3), sam_deng: F(3), song_deng: F(2),
  };

  /** A hand's value under a profile: its label, what it is paid at, and the key that orders hands. */
  class Hand {
    constructor(rules, options, cards) {
      this.cards = [...cards];
      if (rules.comparison === "ante") {
        this.ante();
        return;
      }
      const straights = rules.comparison === "ranked" || Boolean(options.straights);
      this.kind = handKind(cards, straights, Boolean(options.ace_low));
      this.taem = taem(cards);
      if (rules.comparison === "classic") {
        const special = { tong: 5, straight_flush: 5, straight: 3, sam_lueang: 3 };
        this.deng = this.kind in special ? special[this.kind] : deng(cards);
        if (this.kind === "pok") this.label = this.deng === 2 ? "pok deng" : "pok";
        else if (this.kind === "normal") this.label = { 3: "sam deng", 2: "song deng" }[this.deng] || "normal";
        else this.label = this.kind.replace(/_/g, " ");
        this.multiplier = F(this.deng);
        this.key = [KIND_ORDER[this.kind], this.taem, this.deng];
        return;
      }
      const d = deng(cards);
      const top = cards.map(card).reduce((best, c) => (cmpKeys(c, best) > 0 ? c : best)); // by rank, then suit
      let name;
      let within;
      if (this.kind === "pok") [name, within] = [d === 2 ? "pok_deng" : "pok", [this.taem]];
      else if (this.kind === "normal") [name, within] = [{ 3: "sam_deng", 2: "song_deng" }[d] || "taem", [this.taem]];
      else if (this.kind === "sam_lueang" && rules.sam_lueang_by_ranks) {
        name = this.kind;
        within = [...cards.map((c) => card(c)[0]).sort((a, b) => b - a), top[1]];
      } else [name, within] = [this.kind, top];
      this.label = name.replace(/_/g, " ");
      this.multiplier = { ...RANKED_MULTIPLIERS, ...rules.multipliers }[name];
      this.key = [KIND_ORDER[this.kind], ...within];
    }

    ante() {
      const cards = this.cards;
      if (cards.length !== 2) throw new Failed("an ante hand has two cards");
      const [[ra, sa], [rb, sb]] = cards.map(card);
      const t = taem(cards);
      const isFlush = sa === sb;
      const isPair = ra === rb;
      const faces = [ra, rb].every((r) => r >= 11 && r <= 13);
      let value;
      if (t >= 8) value = t * 10;
      else if (isFlush && new Set([ra, rb]).size === 2 && [ra, rb].includes(14) && [ra, rb].includes(13)) value = 75;
      else if (isPair && [14, 5, 6, 10].includes(ra)) value = 74;
      else if (faces) value = 73;
      else if ([ra, rb].includes(10) && [ra, rb].some((r) => r >= 11 && r <= 13)) value = 72;
      else if (isFlush && t === 0 && points(cards[0]) && points(cards[1])) value = 71;
      else value = t * 10;
      this.value = value;
      this.special = isFlush || isPair || (value >= 71 && value <= 75);
      if (value >= 71 && value <= 75) this.label = ANTE_NAMES[value];
      else this.label = `${Math.floor(value / 10)}` + (this.special ? (isPair ? " pair" : " flush") : "");
      this.key = [value];
    }
  }

  function classicMultiplier(winner, loser) {
    if (winner.kind !== loser.kind) {
      const kinds = new Set([winner.kind, loser.kind]);
      return kinds.has("tong") && kinds.has("sam_lueang") && kinds.size === 2 ? F(2) : F(winner.deng);
    }
    if (winner.taem !== loser.taem) return F(winner.deng);
    return F(winner.deng - loser.deng);
  }

  /** What a stake on ``player`` against ``banker`` settles to (docs/audit.md, "Money"). */
  function expectedBet(rules, player, banker, stake) {
    stake = BigInt(stake);
    if (rules.comparison === "ante") {
      const half = stake / 2n;
      let ante;
      let bet;
      let outcome;
      if (player.value > banker.value) {
        const plain = [0, 60].includes(banker.value) && !banker.special;
        const strong = player.value >= 80 && player.special;
        [ante, bet, outcome] = [half, player.special && (!plain || strong) ? half : 0n, "player_wins"];
      } else if (player.value < banker.value) {
        [ante, bet, outcome] = [-half, banker.special ? -half : 0n, "banker_wins"];
      } else [ante, bet, outcome] = [0n, 0n, "tie"];
      const net = ante + bet;
      const gross = net < 0n ? -net : net;
      return { outcome, multiplier: new Frac(gross, stake), gross, commission: 0n, net, ante_net: ante, bet_net: bet };
    }
    const order = cmpKeys(player.key, banker.key);
    if (order === 0) return { outcome: "tie", multiplier: F(0), gross: 0n, commission: 0n, net: 0n };
    const classic = rules.comparison === "classic";
    if (order > 0) {
      const m = classic ? classicMultiplier(player, banker) : player.multiplier;
      const gross = m.times(stake);
      const commission = (rules.player_commission || F(0)).timesUp(gross);
      return { outcome: "player_wins", multiplier: m, gross, commission, net: gross - commission };
    }
    let m = classic ? classicMultiplier(banker, player) : banker.multiplier;
    m = maxFrac(m, rules.loss_floor || F(0)); // kingmaker: a loser pays at least 1x
    const gross = m.times(stake);
    return { outcome: "banker_wins", multiplier: m, gross, commission: 0n, net: -gross };
  }

  V.rules = { Frac, F, card, points, taem, Hand, PROFILES, expectedBet, classicMultiplier };
})(globalThis);
