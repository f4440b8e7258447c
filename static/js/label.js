// Pair labelling page: one keystroke answers and advances; Backspace undoes the last answer,
// a click on any recent answer changes it; `?` shows the keys.
//
// No key press is lost:
// * a queue of QUEUE_DEPTH prefetched pairs sits behind the one on screen, refilled in the
//   background (each answer's POST brings one pair back; GET next-pair fills the rest);
// * a key pressed while no pair is on screen waits and answers the next pair that arrives (it
//   is listed under "Your last answers" like any other), or is refused in the status line when
//   there is no pair left or too many keys already wait;
// * answers go through an outbox kept in localStorage, sent one at a time in order and retried
//   with the same client_id (the server stores each client_id once), so nothing is lost or
//   stored twice; the status line counts what is not yet stored, and closing the tab with
//   unsent answers asks first. When the page is behind (more than one answer waits at the head
//   of the outbox) those answers go in one batch request (judgments/batch/, at most BATCH_MAX),
//   still in order: each answer is settled on its own (created, duplicate, refused, or
//   throttled and sent again), and a failed request is retried whole with the same client_ids.
//
// Reasons (record studies): each field the two records differ in gets a letter (a, b, d, …;
// never C or S); pressing it marks that field as what decides the answer, before the answer's
// key. The marks belong to the pair on screen — a new pair starts with none — and travel in the
// answer's own POST (`reasons`, with 1 or 2 only), so a reason can neither be lost nor land on
// another pair.
(() => {
  "use strict";
  const app = document.getElementById("label-app");
  if (!app) return;
  const csrfMeta = document.querySelector('meta[name="csrf-token"]').content;
  // The cookie holds the current token even after a login in another tab rotated it.
  const csrf = () => (document.cookie.match(/(?:^|; )csrftoken=([^;]+)/) || [])[1] || csrfMeta;
  const nextUrl = app.dataset.nextUrl;
  const judgmentsUrl = app.dataset.judgmentsUrl;
  const batchUrl = `${judgmentsUrl}batch/`;
  const skipsUrl = app.dataset.skipsUrl;
  const commentsUrl = app.dataset.commentsUrl;
  const storeKey = `${app.dataset.study}:${app.dataset.user}`;
  const outboxKey = `fairmetric:outbox:${storeKey}`;
  const recentKey = `fairmetric:recent:${storeKey}`;
  const LABELS = { "1": "comparable", "2": "incomparable", "0": "unsure" };
  const RECENT = 10;
  const QUEUE_DEPTH = 5; // pairs prefetched behind the one on screen
  const MAX_WAITING = 30; // keys pressed ahead of the pairs
  const MAX_HELD = 20; // pairs the server can be told to leave out (exclude=, 40 ids)
  const BATCH_MAX = 50; // answers per batch request (the server's JUDGMENT_BATCH_MAX)
  const REASON_LETTERS = "abdefghijklmnopqrtuvwxyz"; // C and S are comment and skip
  const REASON_LABELS = new Set(["comparable", "incomparable"]);
  const MAX_REASONS = 5; // the server's annotation/reasons.py: MAX_REASONS

  const el = (id) => document.getElementById(id);
  const cards = { left: el("card-left"), right: el("card-right") };
  const statusEl = el("status");

  let answered = Number(app.dataset.answered) || 0;
  const target = Number(app.dataset.target) || 0;
  // The study stops annotators at the target: then the completion page follows the last save.
  const stops = app.dataset.stops === "1";
  const doneUrl = app.dataset.doneUrl;
  let complete = false;
  let current = null; // {left, right}
  let shownLeft = null; // the item last drawn on the left card (for the record comparison)
  let shownAt = 0;
  let queue = []; // prefetched pairs, next first
  const waiting = []; // labels pressed while no pair was on screen
  let fetching = null;
  let done = false;
  let leaving = false; // on the way to the completion page
  let recent = loadJSON(recentKey); // newest first: {client_id, left, right, label, refused}
  let outbox = loadJSON(outboxKey); // {op: "post", body} | {op: "delete", client_id}
  const inFlight = new Set(); // outbox entries being sent
  let flushing = false;
  let problem = null; // {text, kind}: the last refusal or failure, until the next success
  let reasonKeys = {}; // letter → field, for the pair on screen
  let chosen = []; // the fields marked as reasons for the pair on screen

  function uuid4() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  function loadJSON(key) {
    try {
      const value = JSON.parse(localStorage.getItem(key) || "[]");
      return Array.isArray(value) ? value : [];
    } catch (e) {
      return [];
    }
  }
  function saveJSON(key, value) {
    try {
      localStorage.setItem(key, JSON.stringify(value));
    } catch (e) {
      /* storage full or disabled: the in-memory copy still works */
    }
  }
  const saveOutbox = () => saveJSON(outboxKey, outbox);
  const saveRecent = () => saveJSON(recentKey, recent.slice(0, RECENT));

  function api(url, options = {}) {
    const headers = { Accept: "application/json", "X-CSRFToken": csrf() };
    if (options.body) headers["Content-Type"] = "application/json";
    return fetch(url, { credentials: "same-origin", headers, ...options });
  }

  const shown = (item) => (item.display === undefined || item.display === null ? item.key : item.display);
  const unsentPosts = () => outbox.filter((op) => op.op === "post").length;

  // --- Status line: always says how many answers are not yet stored -------------------------

  function renderStatus() {
    const unsent = outbox.length;
    const parts = [];
    let kind = "good";
    if (problem) {
      parts.push(problem.text);
      kind = problem.kind;
    }
    if (unsent) {
      const what = unsent === 1 ? "1 change" : `${unsent} changes`;
      const posts = unsentPosts();
      const label = posts === unsent ? (posts === 1 ? "1 answer" : `${posts} answers`) : what;
      parts.push(`${label} not saved yet — sending…`);
      if (!problem) kind = "pending";
    }
    if (waiting.length) {
      parts.push(`${waiting.length} key${waiting.length === 1 ? "" : "s"} waiting for the next pair.`);
      if (!problem) kind = "pending";
    }
    if (!parts.length) parts.push(recent.length || answered ? "All answers saved." : "");
    statusEl.textContent = parts.join(" ");
    statusEl.className = `status ${kind}`;
    app.dataset.unsent = String(unsent);
  }

  // A refusal stays in the status line until the next key press.
  function refuse(text) {
    problem = { text, kind: "error", refusal: true };
    renderStatus();
  }

  // --- Rendering ------------------------------------------------------------------------------

  function renderCard(card, item) {
    item = { kind: "word", payload: null, ...item };
    const display = shown(item);
    card.replaceChildren();
    card.className = `item-card kind-${item.kind}`;
    card.dataset.itemId = item.id;
    if (isRecord(item)) {
      // The fields are in the side-by-side table under the pair (renderCompare).
      const title = document.createElement("h3");
      title.textContent = display;
      card.append(title);
    } else if (item.kind === "text") {
      for (const para of String(display).split(/\n\s*\n/)) {
        const p = document.createElement("p");
        p.textContent = para;
        card.appendChild(p);
      }
    } else {
      const big = document.createElement("div");
      big.className = "big";
      big.textContent = display;
      card.appendChild(big);
    }
    if (display !== item.key) {
      const key = document.createElement("div");
      key.className = "key muted";
      key.textContent = item.key;
      card.appendChild(key);
    }
    // The right card is drawn after the left: then the pair's records are compared.
    if (card === cards.left) shownLeft = item;
    else renderCompare(shownLeft, item);
  }

  function isRecord(item) {
    return Boolean(item) && item.kind === "record" && item.payload && typeof item.payload === "object";
  }

  const fieldText = (value) => (value === null || value === undefined ? "" : String(value));

  // Two records as one table, field by field; a differing field is marked with "≠" and the words
  // "differs" (read by screen readers), not by colour alone.
  function renderCompare(left, right) {
    const box = el("record-compare");
    if (!box) return;
    box.replaceChildren();
    box.hidden = !(isRecord(left) && isRecord(right));
    const app = el("label-app");
    if (app) app.classList.toggle("records", !box.hidden);
    const pair = document.querySelector(".pair");
    if (pair) pair.classList.toggle("records", !box.hidden);
    if (box.hidden) return;
    const fields = [...new Set([...Object.keys(left.payload), ...Object.keys(right.payload)])];
    const table = document.createElement("table");
    table.className = "compare";
    // The key column names each record: it always differs, so it is not marked.
    const isKey = (f) => fieldText(left.payload[f]) === left.key && fieldText(right.payload[f]) === right.key;
    const differing = fields.filter(
      (f) => !isKey(f) && fieldText(left.payload[f]) !== fieldText(right.payload[f]));
    reasonKeys = {};
    differing.slice(0, REASON_LETTERS.length).forEach((f, i) => { reasonKeys[REASON_LETTERS[i]] = f; });
    const letterOf = Object.fromEntries(Object.entries(reasonKeys).map(([k, f]) => [f, k]));
    table.createCaption().textContent =
      `The two records, field by field: ${differing.length} of ${fields.length} differ (marked ≠).`
      + (differing.length ? " Optional: press a differing field's letter to mark it as what decides your answer." : "");
    const head = table.createTHead().insertRow();
    for (const text of ["Field", shown(left), shown(right)]) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = text;
      head.appendChild(th);
    }
    const body = table.createTBody();
    for (const field of fields) {
      const tr = body.insertRow();
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = field;
      if (differing.includes(field)) {
        tr.className = "differs";
        tr.dataset.differs = "1";
        const mark = document.createElement("span");
        mark.className = "diff-mark";
        mark.textContent = " ≠ differs";
        th.appendChild(mark);
        if (letterOf[field]) th.appendChild(reasonButton(field, letterOf[field]));
      }
      tr.appendChild(th);
      tr.insertCell().textContent = fieldText(left.payload[field]);
      tr.insertCell().textContent = fieldText(right.payload[field]);
    }
    box.appendChild(table);
  }

  // The mark of one differing field as a reason: its letter, pressed (or clicked) to toggle.
  function reasonButton(field, letter) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "reason";
    button.dataset.field = field;
    button.setAttribute("aria-pressed", chosen.includes(field) ? "true" : "false");
    button.setAttribute("aria-label", `Reason: ${field} (key ${letter.toUpperCase()})`);
    const kbd = document.createElement("kbd");
    kbd.textContent = letter.toUpperCase();
    button.appendChild(kbd);
    button.addEventListener("click", () => toggleReason(field));
    return button;
  }

  function renderReasons() {
    for (const button of document.querySelectorAll("#record-compare button.reason")) {
      const on = chosen.includes(button.dataset.field);
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.closest("tr").classList.toggle("reason-chosen", on);
    }
    const line = el("reasons-line");
    if (line) line.textContent = chosen.length ? `Reason: ${chosen.join(", ")} — press 1 or 2 to answer with it.` : "";
  }

  function toggleReason(field) {
    if (!current) {
      refuse("Nothing on screen to give a reason for.");
      return;
    }
    if (chosen.includes(field)) {
      chosen = chosen.filter((f) => f !== field);
    } else if (chosen.length >= MAX_REASONS) {
      refuse(`At most ${MAX_REASONS} fields as reasons.`);
      return;
    } else {
      chosen = [...chosen, field];
    }
    renderReasons();
  }

  function renderEmpty() {
    renderCompare(null, null);
    for (const card of Object.values(cards)) {
      card.className = "item-card empty";
      delete card.dataset.itemId;
      card.replaceChildren();
      const p = document.createElement("p");
      p.className = "muted";
      p.textContent = done ? "No more pairs for you in this study. Thank you!" : "Loading…";
      card.appendChild(p);
    }
  }

  // Put `pair` on screen (or the empty state); keys that wait answer it at once.
  function show(pair) {
    current = pair;
    chosen = []; // reasons belong to one pair
    reasonKeys = {};
    let consumed = 0;
    while (current && waiting.length) {
      record(waiting.shift());
      consumed += 1;
      current = queue.shift() || null;
    }
    if (consumed) {
      renderProgress();
      renderRecent();
      flush();
    }
    if (current) {
      renderCard(cards.left, current.left);
      renderCard(cards.right, current.right);
      shownAt = performance.now();
    } else {
      renderEmpty();
    }
    renderReasons();
    renderStatus();
  }

  function renderProgress() {
    // Never "32 / 20": the count stops at the target, answers beyond it are said apart.
    el("answered").textContent = Math.min(answered, target);
    el("extra").textContent = answered > target ? ` (+${answered - target} beyond the target)` : "";
    el("progress-bar").value = Math.min(answered, target);
  }

  function stateOf(r) {
    if (r.refused) return "refused";
    const op = outbox.find((x) => x.op === "post" && x.body.client_id === r.client_id);
    if (!op) return "saved";
    return inFlight.has(op) ? "sending" : "unsent";
  }
  const STATE_TEXT = { saved: "saved", sending: "sending…", unsent: "not sent yet", refused: "not saved" };

  function renderRecent() {
    const list = el("recent");
    list.replaceChildren();
    for (const r of recent.slice(0, RECENT)) {
      const state = stateOf(r);
      const li = document.createElement("li");
      li.className = `recent-${state} label-${r.label}`;
      li.dataset.clientId = r.client_id;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "change";
      const pair = `${shown(r.left)} · ${shown(r.right)}`;
      button.setAttribute("aria-label", `Change your answer to ${pair} (${r.label}, ${STATE_TEXT[state]})`);
      const what = document.createElement("span");
      what.className = "pair-text";
      what.textContent = pair;
      const label = document.createElement("span");
      label.className = "answer-label";
      label.textContent = r.reasons && r.reasons.length ? `${r.label} (${r.reasons.join(", ")})` : r.label;
      const st = document.createElement("span");
      st.className = "state";
      st.textContent = STATE_TEXT[state];
      button.append(what, " — ", label, " ", st);
      button.addEventListener("click", () => change(r.client_id));
      li.appendChild(button);
      list.appendChild(li);
    }
  }

  // --- Pairs ------------------------------------------------------------------------------------

  const pairKey = (a, b) => (a < b ? `${a}-${b}` : `${b}-${a}`);
  // Whether server order `a` comes before `b` (arrays of integers, compared in turn).
  function before(a, b) {
    for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
      if (a[i] !== b[i]) return a[i] < b[i];
    }
    return a.length < b.length;
  }

  function heldKeys() {
    const held = [];
    if (current) held.push(pairKey(current.left.id, current.right.id));
    for (const p of queue) held.push(pairKey(p.left.id, p.right.id));
    for (const op of outbox) {
      if (op.op === "post" || op.op === "skip") held.push(pairKey(op.body.item_a, op.body.item_b));
    }
    return [...new Set(held)];
  }
  // The server is told the pairs on screen and in the queue first, then the unsent answers.
  const excludeParam = () => encodeURIComponent(heldKeys().slice(0, MAX_HELD).join(","));

  // A next pair, from GET next-pair or carried by a judgment POST's `next_pair`; true when it
  // was new to this page (queued or shown).
  function offer(data) {
    let accepted = false;
    if (data.complete) {
      // The study stops this annotator at the target: no more pairs; the completion page
      // follows once every answer is saved.
      complete = true;
      done = true;
      queue = [];
      current = null;
      show(null);
      refuseWaiting();
      if (!outbox.length && !flushing) leave();
      return false;
    }
    if (data.done) {
      done = true; // none left but those this page holds
    } else {
      done = false;
      const key = pairKey(data.left.id, data.right.id);
      // Every pair offered is kept unless this page holds it already: the server handed it out
      // (taken from the annotator's queue, annotation/labelling/pair_queue.py) and offers it
      // no more, so a pair dropped here for a full queue — answers' next pairs arriving beside
      // a refill — was never shown; a candidate pair was lost that way under load. The queue
      // stays near QUEUE_DEPTH: refill() asks only when it runs short.
      if (!heldKeys().includes(key)) {
        // In the server's order (`order`): answers in flight together may bring their next
        // pairs back reversed, and an asked pair must not wait behind the strategy's.
        const pair = { left: data.left, right: data.right, order: data.order || null };
        const later = pair.order ? queue.findIndex((p) => p.order && before(pair.order, p.order)) : -1;
        queue.splice(later < 0 ? queue.length : later, 0, pair);
        accepted = true;
      }
    }
    if (!current) show(queue.shift() || null);
    if (done && !current) refuseWaiting();
    return accepted;
  }

  // Refill the queue in the background. Every unsent answer will bring a pair back with its
  // POST, so at a person's pace no GET is needed; one is made when the queue runs short anyway.
  function refill() {
    if (fetching || done) return;
    const short = queue.length + unsentPosts() < QUEUE_DEPTH;
    if (!short && (current || queue.length)) return;
    fetching = api(`${nextUrl}?exclude=${excludeParam()}`)
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`next pair: HTTP ${r.status}`))))
      .then((data) => {
        fetching = null;
        if (problem && problem.fromFetch) problem = null;
        const accepted = offer(data);
        renderStatus();
        // Keep filling while it helps; a pair this page already holds is not asked for at once.
        if (accepted) refill();
        else if (!data.done && !current) setTimeout(refill, 300);
      })
      .catch((err) => {
        fetching = null;
        problem = { text: `Could not load the next pair (${err.message}); retrying…`, kind: "warn", fromFetch: true };
        renderStatus();
        setTimeout(refill, 2000);
      });
  }

  function refuseWaiting() {
    if (!waiting.length) return;
    const n = waiting.length;
    waiting.length = 0;
    refuse(`${n === 1 ? "A key was" : `${n} keys were`} not used: there is no pair left to answer.`);
  }

  // --- Answers, undo and change -----------------------------------------------------------------

  // Answer the pair on screen with `label` (queue it for sending); the caller shows the next.
  function record(label) {
    const elapsed = Math.max(0, Math.round(performance.now() - shownAt));
    const body = {
      item_a: current.left.id,
      item_b: current.right.id,
      label,
      client_id: uuid4(),
      elapsed_ms: elapsed,
    };
    const reasons = REASON_LABELS.has(label) ? chosen : [];
    if (reasons.length) body.reasons = [...reasons];
    chosen = [];
    outbox.push({ op: "post", body });
    saveOutbox();
    recent.unshift({ client_id: body.client_id, left: current.left, right: current.right, label, reasons: [...reasons] });
    recent = recent.slice(0, RECENT);
    saveRecent();
    answered += 1;
  }

  function press(label) {
    if (problem && (problem.transient || problem.refusal)) problem = null;
    if (current) {
      record(label);
      if (stops && answered >= target) {
        // The target: no more pairs; the answer's response (complete) leads to the done page.
        queue = [];
        done = true;
        show(null);
      } else {
        show(queue.shift() || null);
      }
    } else if (done) {
      refuse(`Key “${label}” not used: there is no pair left to answer.`);
      return;
    } else if (waiting.length >= MAX_WAITING) {
      refuse(`Key “${label}” not used: ${MAX_WAITING} keys already wait for pairs.`);
      return;
    } else {
      waiting.push(label);
      renderStatus();
    }
    renderProgress();
    renderRecent();
    refill();
    flush();
  }

  // Take back one answer (any of the recent ones) and show its pair again to be answered anew.
  function change(clientId) {
    const index = recent.findIndex((r) => r.client_id === clientId);
    if (index < 0) return;
    const r = recent[index];
    const queued = outbox.findIndex((op) => op.op === "post" && op.body.client_id === clientId);
    if (queued >= 0 && !inFlight.has(outbox[queued])) {
      outbox.splice(queued, 1); // never sent: just forget it
    } else if (!r.refused) {
      outbox.push({ op: "delete", client_id: clientId });
    }
    saveOutbox();
    recent.splice(index, 1);
    saveRecent();
    if (!r.refused) answered = Math.max(0, answered - 1);
    if (current) queue.unshift(current);
    waiting.length = 0;
    done = false;
    problem = { text: `Answer it again: ${shown(r.left)} · ${shown(r.right)} (was ${r.label}).`, kind: "", transient: true };
    show({ left: r.left, right: r.right });
    renderProgress();
    renderRecent();
    flush();
  }

  function undo() {
    if (!recent.length) {
      refuse("Nothing to undo.");
      return;
    }
    change(recent[0].client_id);
  }

  async function send(op) {
    if (op.op === "skip" || op.op === "comment") {
      const r = await api(op.op === "skip" ? skipsUrl : commentsUrl, {
        method: "POST", body: JSON.stringify(op.body),
      });
      if (r.status === 200 || r.status === 201) return { ok: true };
      return { ok: false, status: r.status, detail: await detail(r) };
    }
    if (op.op === "post") {
      const r = await api(`${judgmentsUrl}?next=1&exclude=${excludeParam()}`, {
        method: "POST", body: JSON.stringify(op.body),
      });
      if (r.status === 200 || r.status === 201) {
        let next = null;
        try {
          next = (await r.json()).next_pair || null;
        } catch (e) {
          /* stored all the same; the next pair comes from GET next-pair */
        }
        return { ok: true, next };
      }
      return { ok: false, status: r.status, detail: await detail(r) };
    }
    const r = await api(`${judgmentsUrl}${op.client_id}/`, { method: "DELETE" });
    if (r.status === 204 || r.status === 404) return { ok: true }; // 404: already undone
    return { ok: false, status: r.status, detail: await detail(r) };
  }

  // Several answers at the head of the outbox, in one request. Returns {ok: false, …} when the
  // request as a whole failed (every answer is retried), else the per-answer outcomes.
  async function sendBatch(ops) {
    const r = await api(`${batchUrl}?next=1&exclude=${excludeParam()}`, {
      method: "POST", body: JSON.stringify({ answers: ops.map((op) => op.body) }),
    });
    if (r.status !== 200) return { ok: false, status: r.status, detail: await detail(r) };
    const data = await r.json();
    return { ok: true, results: data.results, next: data.next_pair || null };
  }

  function leadingPosts() {
    const run = [];
    for (const op of outbox) {
      if (op.op !== "post" || run.length >= BATCH_MAX) break;
      run.push(op);
    }
    return run;
  }

  // An answer the server refused for good (e.g. the study closed): tell the annotator.
  function refused(op, text) {
    const r = recent.find((x) => x.client_id === op.body.client_id);
    if (r) r.refused = true;
    saveRecent();
    answered = Math.max(0, answered - 1);
    renderProgress();
    problem = { text: `Not saved: ${text}`, kind: "error", refusal: true };
    done = false; // its pair may be offered again
  }

  const isFinal = (result) => {
    const authLost = result.status === 401
      || (result.status === 403 && /CSRF|credentials/i.test(result.detail || ""));
    if (authLost) result.detail = `${result.detail} — log in again (in another tab)`;
    return result.status >= 400 && result.status < 500 && result.status !== 429 && !authLost;
  };

  async function detail(r) {
    try {
      const data = await r.json();
      return data.detail || JSON.stringify(data);
    } catch (e) {
      return `HTTP ${r.status}`;
    }
  }

  async function flush() {
    if (flushing) return;
    flushing = true;
    let delay = 1000;
    while (outbox.length) {
      const run = leadingPosts();
      if (run.length > 1) {
        delay = await flushBatch(run, delay);
        continue;
      }
      const op = outbox[0];
      inFlight.add(op);
      renderRecent();
      let result;
      try {
        result = await send(op);
      } catch (e) {
        result = { ok: false, status: 0, detail: "network error" };
      }
      inFlight.delete(op);
      // Retried: network errors, 5xx, 429, and a lost session or CSRF token (log in again in
      // another tab; the outbox keeps the answers). Other 4xx are final refusals.
      const final = isFinal(result);
      if (result.ok || final) {
        outbox = outbox.filter((x) => x !== op);
        saveOutbox();
        delay = 1000;
        if (result.ok) {
          if (problem && problem.failure) problem = null; // the retry worked
          if (result.next) offer(result.next);
        } else if (op.op === "post") {
          refused(op, result.detail); // refused for good: tell the annotator, keep going
        } else {
          problem = { text: `Not saved: ${result.detail}`, kind: "error", refusal: true };
          done = false;
        }
        renderRecent();
        renderStatus();
        refill();
      } else {
        delay = await retryLater(result, delay);
      }
    }
    flushing = false;
    if (complete) leave();
  }

  // To the completion page, once: a next-pair GET that was in flight may also answer
  // `complete` after the navigation has begun, and a second navigation would abort the first.
  function leave() {
    if (leaving) return;
    leaving = true;
    window.location.assign(doneUrl);
  }

  // A failed send: say so, wait `delay`, and return the next (doubled) delay.
  async function retryLater(result, delay) {
    problem = {
      text: `Saving failed (${result.detail}); retrying in ${delay / 1000}s — nothing is lost.`,
      kind: "warn",
      failure: true,
    };
    renderRecent();
    renderStatus();
    await new Promise((resolve) => setTimeout(resolve, delay));
    return Math.min(delay * 2, 15000);
  }

  // One batch of the answers at the head of the outbox; returns the next retry delay.
  async function flushBatch(run, delay) {
    run.forEach((op) => inFlight.add(op));
    renderRecent();
    let result;
    try {
      result = await sendBatch(run);
    } catch (e) {
      result = { ok: false, status: 0, detail: "network error" };
    }
    run.forEach((op) => inFlight.delete(op));
    if (!result.ok && !isFinal(result)) return retryLater(result, delay);
    // Settled answers leave the outbox; throttled ones stay at its head, in order.
    let wait = 0;
    const settled = new Set();
    run.forEach((op, i) => {
      const outcome = result.ok ? result.results[i] : { status: "error", detail: result.detail };
      if (outcome.status === "throttled") {
        wait = Math.max(wait, outcome.retry_after || 1);
        return;
      }
      settled.add(op);
      if (outcome.status === "error") refused(op, outcome.detail);
    });
    outbox = outbox.filter((x) => !settled.has(x));
    saveOutbox();
    if (result.ok && problem && problem.failure) problem = null; // the retry worked
    if (result.ok && result.next) offer(result.next);
    renderRecent();
    renderStatus();
    refill();
    if (wait) await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    return 1000;
  }

  // --- Skip and comment (S, C) -------------------------------------------------------------------

  // Pass on the pair on screen: queued like an answer (in order, retried), but not one.
  function skip() {
    if (!current) {
      refuse("Nothing on screen to skip.");
      return;
    }
    outbox.push({ op: "skip", body: { item_a: current.left.id, item_b: current.right.id } });
    saveOutbox();
    problem = { text: `Skipped: ${shown(current.left)} · ${shown(current.right)} (not an answer; not shown to you again).`, kind: "", transient: true };
    show(queue.shift() || null);
    renderStatus();
    refill();
    flush();
  }

  const commentDialog = el("comment-dialog");
  let commentPair = null;
  function openComment() {
    if (!current) {
      refuse("Nothing on screen to comment on.");
      return;
    }
    commentPair = current;
    el("comment-pair").textContent = `${shown(current.left)} · ${shown(current.right)}`;
    el("comment-text").value = "";
    commentDialog.showModal();
    el("comment-text").focus();
  }
  function saveComment() {
    const text = el("comment-text").value.trim();
    if (!text) {
      el("comment-text").focus();
      return;
    }
    outbox.push({
      op: "comment",
      body: { item_a: commentPair.left.id, item_b: commentPair.right.id, text, client_id: uuid4() },
    });
    saveOutbox();
    commentDialog.close();
    problem = { text: "Comment saved for the reviewers (sent in the background).", kind: "", transient: true };
    renderStatus();
    flush();
  }

  // --- Keyboard help ------------------------------------------------------------------------------

  const help = el("key-help");
  function toggleHelp() {
    if (!help) return;
    if (help.open) help.close();
    else help.showModal();
  }

  // --- Wiring -----------------------------------------------------------------------------------

  document.addEventListener("keydown", (e) => {
    if (e.target.closest && e.target.closest("input, textarea, select, [contenteditable]")) return;
    if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
    if (commentDialog && commentDialog.open) return; // typing a comment; Esc closes it
    if (help && help.open) {
      if (e.key === "?") {
        e.preventDefault();
        help.close();
      }
      return; // Escape closes the dialog itself
    }
    if (LABELS[e.key]) {
      e.preventDefault();
      press(LABELS[e.key]);
    } else if (e.key === "Backspace") {
      e.preventDefault();
      undo();
    } else if (e.key === "s" || e.key === "S") {
      e.preventDefault();
      skip();
    } else if (e.key === "c" || e.key === "C") {
      e.preventDefault();
      openComment();
    } else if (e.key === "?") {
      e.preventDefault();
      toggleHelp();
    } else if (e.key.length === 1 && REASON_LETTERS.includes(e.key.toLowerCase())) {
      // Letters name fields of records only; elsewhere they do nothing, as before.
      if (current && !(isRecord(current.left) && isRecord(current.right))) return;
      e.preventDefault();
      const field = reasonKeys[e.key.toLowerCase()];
      if (field) toggleReason(field);
      else if (current) refuse(`Key “${e.key.toUpperCase()}” is no differing field's letter on this pair.`);
      else refuse(`Key “${e.key.toUpperCase()}” not used: no pair on screen to give a reason for.`);
    }
  });
  for (const button of app.querySelectorAll("button.answer")) {
    button.addEventListener("click", () => press(button.dataset.label));
  }
  el("undo").addEventListener("click", undo);
  el("skip").addEventListener("click", skip);
  el("comment-open").addEventListener("click", openComment);
  el("comment-save").addEventListener("click", saveComment);
  el("comment-cancel").addEventListener("click", () => commentDialog.close());
  const helpButton = el("help-open");
  if (helpButton) helpButton.addEventListener("click", toggleHelp);
  const helpClose = el("help-close");
  if (helpClose) helpClose.addEventListener("click", () => help.close());
  window.addEventListener("online", flush);
  // Closing the tab (or leaving the page) with answers not yet stored asks first; the outbox
  // in localStorage would send them on the next visit, but only if there is one.
  window.addEventListener("beforeunload", (e) => {
    if (!outbox.length) return;
    e.preventDefault();
    e.returnValue = "";
  });

  async function start() {
    const displayed = new Map(recent.map((r) => [r.client_id, r]));
    try {
      const r = await api(`${judgmentsUrl}?mine=1&limit=${RECENT}`);
      if (r.ok) {
        const data = await r.json();
        // The server stores pairs in canonical order; this browser remembers how they were shown.
        const fromServer = data.results.map((j) => {
          const seen = displayed.get(j.client_id);
          return seen && !seen.refused
            ? { ...seen, label: j.label, reasons: j.reasons || [] }
            : { client_id: j.client_id, left: j.item_a, right: j.item_b, label: j.label, reasons: j.reasons || [] };
        });
        const stored = new Set(fromServer.map((r) => r.client_id));
        const pending = new Set(outbox.filter((op) => op.op === "post").map((op) => op.body.client_id));
        // Answers of this browser not stored yet (still in the outbox) or refused stay listed.
        const local = recent.filter((r) => !stored.has(r.client_id) && (pending.has(r.client_id) || r.refused));
        recent = [...local, ...fromServer].slice(0, RECENT);
      }
    } catch (e) {
      /* keep this browser's own list */
    }
    const listed = new Set(recent.map((r) => r.client_id));
    for (const op of outbox) {
      if (op.op === "post" && !listed.has(op.body.client_id)) {
        recent.unshift({
          client_id: op.body.client_id,
          left: { id: op.body.item_a, key: `#${op.body.item_a}` },
          right: { id: op.body.item_b, key: `#${op.body.item_b}` },
          label: op.body.label,
          reasons: op.body.reasons || [],
        });
      }
    }
    saveRecent();
    renderRecent();
    show(null);
    refill();
    if (outbox.length) flush();
  }
  start();
})();
