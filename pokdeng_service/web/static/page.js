/* The page: the step-through control, and the verdict of the in-browser check written into the page.
   Everything it writes is text (textContent), never markup. When the check is done, the document's root
   element carries data-verdict="pass" or "fail" and data-failed (the failed checks' names, comma
   separated): what a person sees, and what the page tests read. */
(function (root) {
  "use strict";
  const V = root.PokdengVerify;
  const doc = root.document;
  const byId = (id) => doc.getElementById(id);
  const state = { raw: null, name: "", verdict: null, runs: 0 };

  function base64Bytes(text) {
    const binary = root.atob(text);
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  }

  /** Minor units as a person reads them, as pokdeng_service.money writes them: the ISO code, the ISO 4217
      exponent's decimals (the page's data-exponents) and the grouping of the page's locale (data-locale):
      "THB 9,867.63". Exact: the amount goes to Intl as a decimal string, never through a float. */
  function money(minor, currency, signed) {
    const code = String(currency || "THB");
    const exponents = Object.fromEntries(
      (doc.documentElement.dataset.exponents || "").split(" ").filter(Boolean).map((p) => p.split(":")),
    );
    const digits = Number(exponents[code] !== undefined ? exponents[code] : 2);
    const n = BigInt(minor);
    const body = (n < 0n ? -n : n).toString().padStart(digits + 1, "0");
    const decimal = (n < 0n ? "-" : "") + (digits ? `${body.slice(0, -digits)}.${body.slice(-digits)}` : body);
    const format = new Intl.NumberFormat(doc.documentElement.dataset.locale || "en", {
      style: "currency", currency: code, currencyDisplay: "code",
      minimumFractionDigits: digits, maximumFractionDigits: digits,
    });
    const text = format.format(decimal).replace(/\u00a0|\u202f/g, " ");
    return (signed && n > 0n ? "+" : "") + text;
  }

  function line(list, mark, text, cls) {
    const item = doc.createElement("li");
    item.className = cls;
    const label = doc.createElement("span");
    label.className = "mark";
    label.textContent = mark;
    item.append(label, " " + text);
    list.append(item);
  }

  function show(verdict) {
    const box = byId("browser-check");
    const list = byId("browser-checks");
    const status = byId("browser-status");
    list.replaceChildren();
    for (const c of verdict.checks) line(list, c.ok ? "ok" : "BAD", `${c.name}: ${c.detail}`, c.ok ? "ok" : "bad");
    for (const w of verdict.warnings) line(list, "WARN", w, "warn");
    const failed = verdict.failed;
    const unanchored = verdict.status === "UNANCHORED";
    status.textContent = {
      PASS: `PASS · ${verdict.subject}: every check passed in this browser`,
      UNANCHORED: `UNANCHORED · ${verdict.subject}: every check passed in this browser, but no signed tree head ` +
        "was checked to cover the round, so nothing outside this file vouches for its events (see the warning)",
      FAIL: `FAIL · ${verdict.subject}: ${failed.join(", ")} failed`,
    }[verdict.status];
    box.classList.toggle("pass", verdict.status === "PASS");
    box.classList.toggle("unanchored", unanchored);
    box.classList.toggle("fail", !verdict.ok);
    answer(verdict.status.toLowerCase(), {
      PASS: "Verified in this browser: every check passed, and a signed tree head, checked with the operator's " +
        "key, anchors the round.",
      UNANCHORED: "Unanchored: every check passed in this browser, but no signed tree head was checked to " +
        "cover the round, so nothing outside this file vouches for its events.",
      FAIL: `Failed in this browser: ${failed.join(", ")}. Do not trust this record; see the checks below.`,
    }[verdict.status]);
    const el = doc.documentElement;
    el.dataset.verdict = verdict.status.toLowerCase();
    el.dataset.failed = failed.join(",");
    el.dataset.unanchored = unanchored ? "yes" : "no";
    el.dataset.runs = String(++state.runs);
  }

  /** The verdict where the page leads with it (the dispute page's headline; the verifier page's too). */
  function answer(stateName, text) {
    const box = byId("answer-verdict");
    if (!box) return;
    box.dataset.state = stateName;
    box.textContent = text;
  }

  async function check() {
    if (state.raw === null) return;
    const status = byId("browser-status");
    let keys;
    try {
      keys = await V.readKeys(byId("key-input").value);
    } catch (error) {
      status.textContent = `The key cannot be read: ${error.message}`;
      answer("error", `Not checked: the key cannot be read (${error.message}).`);
      doc.documentElement.dataset.verdict = "error";
      return;
    }
    status.textContent = "Checking in this browser…";
    answer("checking", "Checking the round in this browser…");
    state.verdict = await V.verify(state.raw, keys);
    show(state.verdict);
    summary(state.raw);
  }

  /** The verifier page: the round the chosen bundle holds, in a few lines (as text). */
  function summary(raw) {
    const section = byId("summary-section");
    if (!section) return;
    let bundle;
    try {
      bundle = JSON.parse(new TextDecoder().decode(raw));
    } catch (_) {
      section.hidden = true;
      return;
    }
    const facts = byId("summary");
    facts.replaceChildren();
    const fact = (name, value) => {
      const dt = doc.createElement("dt");
      dt.textContent = name;
      const dd = doc.createElement("dd");
      dd.textContent = value;
      facts.append(dt, dd);
    };
    const profile = bundle.profile || {};
    const times = bundle.times || {};
    const voided = (bundle.events || []).find((e) => e && e.kind === "round_voided");
    fact("Round", String(bundle.round_id));
    fact("Rules", `${profile.name} v${profile.version}`);
    fact("Outcome", voided ? `voided by ${(voided.data && voided.data.by) || "an operator (not recorded)"}: ${voided.data && voided.data.reason}` : "settled");
    fact("Opened", String(times.opened || "").replace("T", " ").replace("+00:00", " UTC"));
    fact("Closed", String(times.closed || "").replace("T", " ").replace("+00:00", " UTC"));
    const opened = (bundle.events || []).find((e) => e && e.kind === "round_opened");
    const currency = (opened && opened.data && opened.data.currency) || "THB";
    fact("Currency", currency);
    const hands = {};
    for (const e of bundle.events || []) {
      if (!e || !e.data) continue;
      if (e.kind === "cards_dealt") for (const [seat, c] of e.data.cards || []) (hands[seat] = hands[seat] || []).push(c);
      if (e.kind === "card_drawn") (hands[e.data.seat] = hands[e.data.seat] || []).push(e.data.card);
    }
    const points = (cards) => {
      try {
        return String(V.rules.taem(cards));
      } catch (_) {
        return "";
      }
    };
    const banker = hands[0] || [];
    const body = byId("payouts").tBodies[0];
    body.replaceChildren();
    for (const p of bundle.payouts || []) {
      const row = body.insertRow();
      const cards = hands[p.seat] || [];
      const cells = [
        ["Seat", p.seat], ["Bettor", p.player], ["Cards", cards.join(" ")], ["Points", points(cards)],
        ["Hand", p.hand], ["Banker", `${banker.join(" ")} · ${points(banker)} · ${p.banker_hand}`],
        ["Result", { player_wins: "wins", banker_wins: "loses", tie: "tie" }[p.outcome] || p.outcome],
        ["Multiplier", decimal(p.multiplier)], ["Stake", money(p.stake, currency)], ["Net", money(p.net, currency, true)],
      ];
      cells.forEach(([label, value], i) => {
        const cell = row.insertCell();
        cell.dataset.label = label;
        cell.textContent = String(value);
        if (i >= 7 || i === 3) cell.className = "num";
      });
    }
    section.hidden = false;
  }

  /** "19/20" → "0.95×" (exact where the decimal is finite) */
  function decimal(text) {
    try {
      const f = V.rules.Frac.parse(text);
      for (let digits = 0; digits < 19; digits++) {
        const scale = 10n ** BigInt(digits);
        if ((f.n * scale) % f.d === 0n) {
          const whole = ((f.n < 0n ? -f.n : f.n) * scale) / f.d;
          let body = whole.toString().padStart(digits + 1, "0");
          if (digits) body = body.slice(0, -digits) + "." + body.slice(-digits);
          return (f.n < 0n ? "-" : "") + body + "×";
        }
      }
      return `${text}×`;
    } catch (_) {
      return String(text);
    }
  }

  /** The verifier page's own shuffle: the seeds of a form to the commitment, the shoe (docs/shuffle.md, with
      the same code that checks a bundle: PokdengVerify.core.shuffle) and the deal, each seat's two cards and,
      with stakes, their outcome as the hands stand (PokdengVerify.rules). */
  async function playForm() {
    const form = byId("play-form");
    const value = (name) => form.elements[name].value;
    const C = V.core;
    const R = V.rules;
    const status = byId("play-status");
    byId("play-result").hidden = false;
    try {
      const seedHex = value("server_seed").trim().toLowerCase();
      if (!/^([0-9a-f]{2})+$/.test(seedHex)) throw new Error("the server seed is hex digits, two a byte");
      const serverSeed = C.fromHex(seedHex);
      if (!/^[0-9]+$/.test(value("nonce").trim())) throw new Error("the nonce is a whole number");
      const nonce = BigInt(value("nonce").trim());
      const decks = Number(value("decks"));
      const profile = value("profile");
      const rules = R.PROFILES[`${profile}@1`];
      let clientSeed = value("client_seed");
      const lines = value("contributions").split("\n").filter((l) => l.trim() !== "");
      if (lines.length) {
        const contributions = lines.map((l) => {
          const at = l.indexOf(": ");
          if (at < 0) throw new Error(`"${l}": write each contribution as contributor: seed`);
          return [l.slice(0, at), l.slice(at + 2)];
        });
        clientSeed = await C.deriveClientSeed(contributions);
      }
      const shoe = await C.shuffle(serverSeed, clientSeed, nonce, decks);
      const order = shoe.join(" ");
      byId("play-commitment").textContent = await C.commitment(serverSeed);
      byId("play-client").textContent = lines.length ? `${clientSeed} (derived from ${lines.length} contribution(s))` : JSON.stringify(clientSeed);
      byId("play-digest").textContent = await C.sha256hex(new TextEncoder().encode(order));
      byId("play-shoe").textContent = order;
      byId("play-count").textContent = String(shoe.length);
      const stakes = value("stakes").split(",").map((t) => t.trim()).filter(Boolean);
      if (stakes.some((t) => !/^[0-9]+$/.test(t))) throw new Error("stakes are whole numbers of minor units");
      const seats = profile === "ante" ? 5 : Math.max(stakes.length, Number(value("seats")));
      if (!(seats >= 1 && seats <= 16)) throw new Error("seats: 1 to 16");
      const hands = {};
      let next = 0;
      for (let round = 0; round < 2; round++) {
        for (const seat of [...Array.from({ length: seats }, (_, i) => i + 1), 0]) {
          (hands[seat] = hands[seat] || []).push(shoe[next++]);
        }
      }
      const currency = value("currency").trim().toUpperCase() || "THB";
      const banker = new R.Hand(rules, {}, hands[0]);
      const body = byId("play-seats-table").tBodies[0];
      body.replaceChildren();
      const row = (cells) => {
        const tr = body.insertRow();
        for (const [label, text, num] of cells) {
          const cell = tr.insertCell();
          cell.dataset.label = label;
          cell.textContent = text;
          if (num) cell.className = "num";
        }
        return tr;
      };
      row([["Seat", "banker"], ["Cards", hands[0].join(" ")], ["Points", String(R.taem(hands[0])), true],
        ["Hand", banker.label], ["Stake", "", true], ["Result", ""], ["Multiplier", "", true], ["Net", "", true]]);
      for (let seat = 1; seat <= seats; seat++) {
        const hand = new R.Hand(rules, {}, hands[seat]);
        const stake = stakes[seat - 1];
        const bet = stake ? R.expectedBet(rules, hand, banker, BigInt(stake)) : null;
        const tr = row([["Seat", String(seat)], ["Cards", hands[seat].join(" ")], ["Points", String(R.taem(hands[seat])), true],
          ["Hand", hand.label], ["Stake", stake ? money(stake, currency) : "", true],
          ["Result", bet ? { player_wins: "wins", banker_wins: "loses", tie: "tie" }[bet.outcome] : ""],
          ["Multiplier", bet ? decimal(bet.multiplier.toString()) : "", true],
          ["Net", bet ? money(bet.net, currency, true) : "", true]]);
        tr.dataset.seat = String(seat);
      }
      status.dataset.state = "pass";
      status.textContent = `The shoe of these seeds: ${shoe.length} cards, the deal of ${seats} seat(s) and the banker.`;
      doc.documentElement.dataset.play = "done";
    } catch (error) {
      status.dataset.state = "error";
      status.textContent = `Not shuffled: ${error.message}`;
      doc.documentElement.dataset.play = "error";
    }
  }

  function stepper() {
    const box = byId("stepper");
    if (!box) return;
    box.hidden = false;
    const total = Number(box.dataset.total);
    const range = byId("step-range");
    const label = byId("step-label");
    const now = byId("step-now");
    const stepped = Array.from(doc.querySelectorAll("[data-step]"));
    const rows = Array.from(doc.querySelectorAll("#timeline li"));
    let at = total;
    let timer = null;
    function go(k) {
      at = Math.max(0, Math.min(total, k));
      range.value = String(at);
      for (const el of stepped) el.classList.toggle("future", Number(el.dataset.step) > at);
      let current = null;
      for (const li of rows) {
        const first = Number(li.dataset.first);
        const last = Number(li.dataset.last);
        li.classList.toggle("future", first > at);
        const here = first <= at && at <= last && at < total;
        li.classList.toggle("current", here);
        if (first <= at && at <= last) current = li;
      }
      label.textContent = at === 0 ? "before the first event" : at === total ? `the end (step ${total})` : `step ${at} of ${total}`;
      now.textContent = current ? current.querySelector(".text").textContent : "";
      doc.documentElement.dataset.step = String(at);
    }
    function stop() {
      if (timer !== null) root.clearInterval(timer);
      timer = null;
    }
    box.addEventListener("click", (event) => {
      const go_ = event.target.closest("button") && event.target.closest("button").dataset.go;
      if (!go_) return;
      if (go_ !== "play") stop();
      if (go_ === "first") go(0);
      else if (go_ === "prev") go(at - 1);
      else if (go_ === "next") go(at + 1);
      else if (go_ === "last") go(total);
      else if (go_ === "play") {
        if (timer !== null) return stop();
        if (at >= total) go(0);
        timer = root.setInterval(() => (at >= total ? stop() : go(at + 1)), 700);
      }
    });
    range.addEventListener("input", () => {
      stop();
      go(Number(range.value));
    });
    box.addEventListener("keydown", (event) => {
      if (event.key === "ArrowLeft") go(at - 1);
      else if (event.key === "ArrowRight") go(at + 1);
    });
    root.PokdengPage.go = go;
    go(total);
  }

  function start() {
    root.PokdengPage = { check, state, go: null, money, playForm };
    stepper();
    const form = byId("key-form");
    if (form) {
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        check();
      });
    }
    const embedded = byId("bundle");
    if (embedded) {
      state.raw = base64Bytes(embedded.dataset.bundle);
      state.name = embedded.dataset.name;
      const link = byId("bundle-link");
      if (link && root.Blob && root.URL && root.URL.createObjectURL) {
        link.href = root.URL.createObjectURL(new root.Blob([state.raw], { type: "application/json" }));
        link.hidden = false;
      }
      check();
    }
    const play = byId("play-form");
    if (play) {
      play.elements.profile.addEventListener("change", () => {
        play.elements.decks.value = String(V.rules.PROFILES[`${play.elements.profile.value}@1`].decks);
      });
      play.addEventListener("submit", (event) => {
        event.preventDefault();
        playForm();
      });
    }
    const picker = byId("bundle-file");
    if (picker) {
      picker.addEventListener("change", async () => {
        const file = picker.files && picker.files[0];
        if (!file) return;
        byId("file-name").textContent = file.name;
        state.raw = new Uint8Array(await file.arrayBuffer());
        state.name = file.name;
        check();
      });
    }
  }

  if (doc.readyState === "loading") doc.addEventListener("DOMContentLoaded", start);
  else start();
})(globalThis);
