// Pair labelling page: one keystroke answers and advances; Backspace undoes the last answer.
// Answers go through an outbox kept in localStorage and are sent in order, retried with the
// same client_id after a network failure, so nothing is lost or stored twice.
(() => {
  "use strict";
  const app = document.getElementById("label-app");
  if (!app) return;
  const csrfMeta = document.querySelector('meta[name="csrf-token"]').content;
  // The cookie holds the current token even after a login in another tab rotated it.
  const csrf = () => (document.cookie.match(/(?:^|; )csrftoken=([^;]+)/) || [])[1] || csrfMeta;
  const nextUrl = app.dataset.nextUrl;
  const judgmentsUrl = app.dataset.judgmentsUrl;
  const outboxKey = `fairmetric:outbox:${app.dataset.study}:${app.dataset.user}`;
  const LABELS = { "1": "comparable", "2": "incomparable", "0": "unsure" };
  const RECENT = 10;

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
  let shownAt = 0;
  const prefetched = [];
  let fetching = null;
  let done = false;
  let recent = []; // newest first: {client_id, left, right, label, state}
  let outbox = loadOutbox();
  let inFlight = null;
  let flushing = false;

  function uuid4() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  function loadOutbox() {
    try {
      return JSON.parse(localStorage.getItem(outboxKey) || "[]");
    } catch (e) {
      return [];
    }
  }
  function saveOutbox() {
    try {
      localStorage.setItem(outboxKey, JSON.stringify(outbox));
    } catch (e) {
      /* storage full or disabled: the in-memory outbox still retries */
    }
  }

  function setStatus(text, kind) {
    statusEl.textContent = text || "";
    statusEl.className = `status ${kind || ""}`;
  }

  function api(url, options = {}) {
    const headers = { Accept: "application/json", "X-CSRFToken": csrf() };
    if (options.body) headers["Content-Type"] = "application/json";
    return fetch(url, { credentials: "same-origin", headers, ...options });
  }

  // --- Rendering ------------------------------------------------------------------------------

  function renderCard(card, item) {
    item = { kind: "word", payload: null, ...item };
    if (item.display === undefined) item.display = item.key;
    card.replaceChildren();
    card.className = `item-card kind-${item.kind}`;
    card.dataset.itemId = item.id;
    if (item.kind === "record" && item.payload && typeof item.payload === "object") {
      const title = document.createElement("h3");
      title.textContent = item.display;
      const table = document.createElement("table");
      table.className = "fields";
      for (const [field, value] of Object.entries(item.payload)) {
        const tr = table.insertRow();
        const th = document.createElement("th");
        th.textContent = field;
        tr.appendChild(th);
        tr.insertCell().textContent = value === null ? "" : String(value);
      }
      card.append(title, table);
    } else if (item.kind === "text") {
      for (const para of String(item.display).split(/\n\s*\n/)) {
        const p = document.createElement("p");
        p.textContent = para;
        card.appendChild(p);
      }
    } else {
      const big = document.createElement("div");
      big.className = "big";
      big.textContent = item.display;
      card.appendChild(big);
    }
    if (item.display !== item.key) {
      const key = document.createElement("div");
      key.className = "key muted";
      key.textContent = item.key;
      card.appendChild(key);
    }
  }

  function show(pair) {
    current = pair;
    if (!pair) {
      for (const card of Object.values(cards)) {
        card.className = "item-card empty";
        card.replaceChildren();
        const p = document.createElement("p");
        p.className = "muted";
        p.textContent = done ? "No more pairs for you in this study. Thank you!" : "Loading…";
        card.appendChild(p);
      }
      return;
    }
    renderCard(cards.left, pair.left);
    renderCard(cards.right, pair.right);
    shownAt = performance.now();
  }

  function renderProgress() {
    // Never "32 / 20": the count stops at the target, answers beyond it are said apart.
    el("answered").textContent = Math.min(answered, target);
    el("extra").textContent = answered > target ? ` (+${answered - target} beyond the target)` : "";
    el("progress-bar").value = Math.min(answered, target);
  }

  function renderRecent() {
    const list = el("recent");
    list.replaceChildren();
    for (const r of recent.slice(0, RECENT)) {
      const li = document.createElement("li");
      li.className = `recent-${r.state} label-${r.label}`;
      li.dataset.clientId = r.client_id;
      li.textContent = `${r.left.key} · ${r.right.key} — ${r.label}`;
      if (r.state !== "saved") {
        const s = document.createElement("span");
        s.className = "muted";
        s.textContent = ` (${r.state})`;
        li.appendChild(s);
      }
      list.appendChild(li);
    }
  }

  // --- Pairs ------------------------------------------------------------------------------------

  const pairKey = (a, b) => (a < b ? `${a}-${b}` : `${b}-${a}`);

  function heldPairs() {
    const held = [];
    if (current) held.push(pairKey(current.left.id, current.right.id));
    for (const p of prefetched) held.push(pairKey(p.left.id, p.right.id));
    for (const op of outbox) if (op.op === "post") held.push(pairKey(op.body.item_a, op.body.item_b));
    return [...new Set(held)].slice(-20);
  }

  // A next pair, from GET next-pair or carried by a judgment POST's `next_pair`.
  function offer(data) {
    if (data.complete) {
      complete = true;
      done = true;
      prefetched.length = 0;
      current = null;
      show(null);
      if (!outbox.length && !flushing) window.location.assign(doneUrl);
      return;
    }
    if (data.done) {
      done = true;
    } else {
      const key = pairKey(data.left.id, data.right.id);
      if (!prefetched.length && !heldPairs().includes(key)) {
        prefetched.push({ left: data.left, right: data.right });
      }
    }
    if (!current) {
      show(prefetched.shift() || null);
      if (current) prefetch();
    }
  }

  function prefetch() {
    if (fetching || done || prefetched.length >= 1) return fetching;
    const url = `${nextUrl}?exclude=${encodeURIComponent(heldPairs().join(","))}`;
    fetching = api(url)
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`next pair: HTTP ${r.status}`))))
      .then((data) => {
        fetching = null;
        offer(data);
      })
      .catch((err) => {
        fetching = null;
        setStatus(`Could not load the next pair (${err.message}); retrying…`, "warn");
        setTimeout(prefetch, 2000);
      });
    return fetching;
  }

  // --- Answers and undo -------------------------------------------------------------------------

  function answer(label) {
    if (!current) return;
    const elapsed = Math.max(0, Math.round(performance.now() - shownAt));
    const body = {
      item_a: current.left.id,
      item_b: current.right.id,
      label,
      client_id: uuid4(),
      elapsed_ms: elapsed,
    };
    outbox.push({ op: "post", body });
    saveOutbox();
    recent.unshift({ client_id: body.client_id, left: current.left, right: current.right, label, state: "sending" });
    recent = recent.slice(0, RECENT);
    answered += 1;
    renderProgress();
    renderRecent();
    if (stops && answered >= target) {
      // The target: no more pairs; the answer's response (complete) leads to the done page.
      prefetched.length = 0;
      done = true;
      show(null);
      flush();
      return;
    }
    show(prefetched.shift() || null);
    // The POST answers with the next pair (?next=1): one request per answer. Ask separately
    // only when there is nothing to show now.
    if (!current) prefetch();
    flush();
  }

  function undo() {
    const last = recent[0];
    if (!last) {
      setStatus("Nothing to undo.", "warn");
      return;
    }
    const queued = outbox.findIndex((op) => op.op === "post" && op.body.client_id === last.client_id);
    if (queued >= 0 && outbox[queued] !== inFlight) {
      outbox.splice(queued, 1); // never sent: just forget it
    } else {
      outbox.push({ op: "delete", client_id: last.client_id });
    }
    saveOutbox();
    recent.shift();
    answered = Math.max(0, answered - 1);
    if (current) prefetched.unshift(current);
    show({ left: last.left, right: last.right });
    renderProgress();
    renderRecent();
    setStatus(`Undone: ${last.left.key} · ${last.right.key}. Answer it again.`, "");
    flush();
  }

  function markRecent(clientId, state) {
    const r = recent.find((x) => x.client_id === clientId);
    if (r) r.state = state;
    renderRecent();
  }

  async function send(op) {
    if (op.op === "post") {
      const held = encodeURIComponent(heldPairs().join(","));
      const r = await api(`${judgmentsUrl}?next=1&exclude=${held}`, {
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
      const op = outbox[0];
      inFlight = op;
      let result;
      try {
        result = await send(op);
      } catch (e) {
        result = { ok: false, status: 0, detail: "network error" };
      }
      inFlight = null;
      // Retried: network errors, 5xx, 429, and a lost session or CSRF token (log in again in
      // another tab; the outbox keeps the answers). Other 4xx are final refusals.
      const authLost = result.status === 401
        || (result.status === 403 && /CSRF|credentials/i.test(result.detail || ""));
      if (authLost) result.detail = `${result.detail} — log in again (in another tab)`;
      const final = result.status >= 400 && result.status < 500 && result.status !== 429 && !authLost;
      if (result.ok || final) {
        outbox = outbox.filter((x) => x !== op);
        saveOutbox();
        delay = 1000;
        if (result.ok) {
          if (op.op === "post") markRecent(op.body.client_id, "saved");
          if (result.next) offer(result.next);
          else if (!prefetched.length) prefetch();
          if (!outbox.length) setStatus("All answers saved.", "good");
        } else {
          // Refused for good (e.g. the study closed): tell the annotator, keep going.
          if (op.op === "post") {
            markRecent(op.body.client_id, "refused");
            answered = Math.max(0, answered - 1);
            renderProgress();
          }
          setStatus(`Not saved: ${result.detail}`, "error");
          if (!prefetched.length) prefetch();
        }
      } else {
        setStatus(`Saving failed (${result.detail}); retrying in ${delay / 1000}s — nothing is lost.`, "warn");
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 15000);
      }
    }
    flushing = false;
    if (complete) window.location.assign(doneUrl);
  }

  // --- Wiring -----------------------------------------------------------------------------------

  document.addEventListener("keydown", (e) => {
    if (e.target.closest && e.target.closest("input, textarea, select, [contenteditable]")) return;
    if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
    if (LABELS[e.key]) {
      e.preventDefault();
      answer(LABELS[e.key]);
    } else if (e.key === "Backspace") {
      e.preventDefault();
      undo();
    }
  });
  for (const button of app.querySelectorAll("button.answer")) {
    button.addEventListener("click", () => answer(button.dataset.label));
  }
  el("undo").addEventListener("click", undo);
  window.addEventListener("online", flush);

  async function start() {
    try {
      const r = await api(`${judgmentsUrl}?mine=1&limit=${RECENT}`);
      if (r.ok) {
        const data = await r.json();
        recent = data.results.map((j) => ({
          client_id: j.client_id, left: j.item_a, right: j.item_b, label: j.label, state: "saved",
        }));
      }
    } catch (e) {
      /* the list fills as the annotator answers */
    }
    const saved = new Set(recent.map((r) => r.client_id));
    for (const op of outbox) {
      if (op.op === "post" && !saved.has(op.body.client_id)) {
        recent.unshift({
          client_id: op.body.client_id,
          left: { id: op.body.item_a, key: `#${op.body.item_a}` },
          right: { id: op.body.item_b, key: `#${op.body.item_b}` },
          label: op.body.label,
          state: "sending",
        });
      }
    }
    renderRecent();
    show(null);
    prefetch();
    if (outbox.length) flush();
  }
  start();
})();
