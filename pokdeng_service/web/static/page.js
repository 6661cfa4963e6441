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
    const el = doc.documentElement;
    el.dataset.verdict = verdict.status.toLowerCase();
    el.dataset.failed = failed.join(",");
    el.dataset.unanchored = unanchored ? "yes" : "no";
    el.dataset.runs = String(++state.runs);
  }

  async function check() {
    if (state.raw === null) return;
    const status = byId("browser-status");
    let keys;
    try {
      keys = await V.readKeys(byId("key-input").value);
    } catch (error) {
      status.textContent = `The key cannot be read: ${error.message}`;
      doc.documentElement.dataset.verdict = "error";
      return;
    }
    status.textContent = "Checking in this browser…";
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
    const body = byId("payouts").tBodies[0];
    body.replaceChildren();
    for (const p of bundle.payouts || []) {
      const row = body.insertRow();
      const cells = [
        ["Seat", p.seat], ["Bettor", p.player], ["Hand", p.hand], ["Banker", p.banker_hand],
        ["Result", { player_wins: "wins", banker_wins: "loses", tie: "tie" }[p.outcome] || p.outcome],
        ["Multiplier", decimal(p.multiplier)], ["Stake", p.stake], ["Net", p.net],
      ];
      cells.forEach(([label, value], i) => {
        const cell = row.insertCell();
        cell.dataset.label = label;
        cell.textContent = String(value);
        if (i >= 5) cell.className = "num";
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
    root.PokdengPage = { check, state, go: null };
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
