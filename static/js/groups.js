// Group curation page: name a group, add items by prefix search or from the suggestions,
// remove them, see the size and heterogeneity indicator, save, and read the edit history.
// Unsaved changes are never dropped silently: "New group", opening another group and leaving
// the page ask first; an empty group cannot be saved.
(() => {
  "use strict";
  const app = document.getElementById("groups-app");
  if (!app) return;
  const csrfMeta = document.querySelector('meta[name="csrf-token"]').content;
  const csrf = () => (document.cookie.match(/(?:^|; )csrftoken=([^;]+)/) || [])[1] || csrfMeta;
  const studyId = app.dataset.study;
  const groupsUrl = app.dataset.groupsUrl;
  const itemsUrl = app.dataset.itemsUrl;
  const suggestionsUrl = app.dataset.suggestionsUrl;
  // Records and texts are searched by any field (server-side); words by the start of the key.
  const byField = app.dataset.spaceKind === "records" || app.dataset.spaceKind === "texts";
  const el = (id) => document.getElementById(id);

  const state = { groupId: null, members: new Map(), original: new Set(), originalName: "" };
  let results = [];
  let highlighted = 0;
  let searchTimer = null;
  let suggestTimer = null;
  let searchSeq = 0;
  let suggestSeq = 0;

  function api(url, options = {}) {
    const headers = { Accept: "application/json", "X-CSRFToken": csrf() };
    if (options.body) headers["Content-Type"] = "application/json";
    return fetch(url, { credentials: "same-origin", headers, ...options });
  }

  function setStatus(text, kind) {
    el("status").textContent = text || "";
    el("status").className = `status ${kind || ""}`;
  }

  // A word: its display text; a record: its key and fields; a text: the paragraph itself.
  function itemLabel(item) {
    if (item.kind === "record" && item.payload && typeof item.payload === "object") {
      const span = document.createElement("span");
      const key = document.createElement("strong");
      key.textContent = item.key;
      const fields = Object.entries(item.payload)
        .map(([field, value]) => `${field}: ${value === null ? "" : value}`)
        .join(" · ");
      span.append(key, ` — ${fields}`);
      return span;
    }
    if (item.kind === "text") {
      const p = document.createElement("p");
      p.className = "items-text";
      p.textContent = item.display === item.key ? item.key : `${item.display} (${item.key})`;
      return p;
    }
    const name = document.createElement("span");
    name.textContent = item.display === item.key ? item.key : `${item.display} (${item.key})`;
    return name;
  }

  function itemButton(item, label, onClick) {
    const li = document.createElement("li");
    li.dataset.itemId = item.id;
    const name = itemLabel(item);
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.setAttribute("aria-label", `${label} ${item.key}`);
    button.addEventListener("click", onClick);
    li.append(name, " ", button);
    return li;
  }

  // --- Members --------------------------------------------------------------------------------

  function renderMembers() {
    const list = el("members");
    list.replaceChildren();
    const items = [...state.members.values()].sort((a, b) => a.key.localeCompare(b.key));
    for (const item of items) {
      list.appendChild(itemButton(item, "Remove", () => removeMember(item.id)));
    }
    const n = state.members.size;
    el("size").textContent = `${n} item${n === 1 ? "" : "s"}`;
    renderSaveState();
    scheduleSuggestions();
  }

  // --- Unsaved changes ------------------------------------------------------------------------

  function dirty() {
    if (el("group-name").value.trim() !== state.originalName) return true;
    if (state.members.size !== state.original.size) return true;
    for (const id of state.members.keys()) if (!state.original.has(id)) return true;
    return false;
  }

  function renderSaveState() {
    const empty = state.members.size === 0;
    el("save").disabled = empty;
    const note = el("save-note");
    if (empty) note.textContent = "Add at least one item to save the group.";
    else if (dirty()) note.textContent = "Unsaved changes.";
    else note.textContent = state.groupId === null ? "" : "All changes saved.";
  }

  // True when there is nothing unsaved, or the curator agrees to drop it.
  function mayDiscard(what) {
    if (!dirty()) return true;
    const name = el("group-name").value.trim() || "the new group";
    return window.confirm(`${what} Your unsaved changes to “${name}” will be lost. Continue?`);
  }

  el("group-name").addEventListener("input", renderSaveState);
  window.addEventListener("beforeunload", (e) => {
    if (!dirty()) return;
    e.preventDefault();
    e.returnValue = "";
  });

  function addMember(item) {
    if (state.members.has(item.id)) {
      setStatus(`${item.key} is already in the group.`, "warn");
      return;
    }
    state.members.set(item.id, item);
    setStatus(`Added ${item.key}.`, "");
    renderMembers();
  }

  function removeMember(id) {
    state.members.delete(id);
    renderMembers();
  }

  // --- Search ---------------------------------------------------------------------------------

  function renderResults(emptyText) {
    const list = el("results");
    list.replaceChildren();
    if (!results.length && emptyText) {
      const li = document.createElement("li");
      li.className = "muted no-results";
      li.textContent = emptyText;
      list.appendChild(li);
    }
    results.forEach((item, i) => {
      const li = itemButton(item, "Add", () => addFromResults(i));
      if (i === highlighted) {
        li.classList.add("highlighted");
        li.setAttribute("aria-current", "true"); // Enter adds this one (not colour alone)
      }
      if (state.members.has(item.id)) li.classList.add("in-group");
      list.appendChild(li);
    });
  }

  function addFromResults(i) {
    const item = results[i];
    if (!item) return;
    addMember(item);
    const search = el("search");
    search.value = "";
    results = [];
    renderResults();
    search.focus();
  }

  async function search(query) {
    const seq = ++searchSeq;
    if (!query.trim()) {
      results = [];
      renderResults();
      return;
    }
    const url = `${itemsUrl}?study=${studyId}&limit=15&q=${encodeURIComponent(query)}`;
    const r = await api(url);
    if (seq !== searchSeq) return; // a newer keystroke won
    if (!r.ok) {
      setStatus(`Search failed (HTTP ${r.status}).`, "error");
      return;
    }
    results = await r.json();
    highlighted = 0;
    const how = byField ? "matches" : "starts with";
    const none = `No item ${how} “${query}” in this study's pool.`;
    renderResults(none);
    if (!results.length) setStatus(none, "warn");
    else setStatus("", "");
  }

  el("search").addEventListener("input", (e) => {
    clearTimeout(searchTimer);
    const query = e.target.value;
    searchTimer = setTimeout(() => search(query).catch(() => setStatus("Search failed.", "error")), 60);
  });
  el("search").addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (!results.length) return;
      highlighted = (highlighted + (e.key === "ArrowDown" ? 1 : results.length - 1)) % results.length;
      renderResults();
    } else if (e.key === "Enter") {
      e.preventDefault();
      addFromResults(highlighted);
    }
  });

  // --- Suggestions and heterogeneity -----------------------------------------------------------

  function scheduleSuggestions() {
    clearTimeout(suggestTimer);
    suggestTimer = setTimeout(() => loadSuggestions().catch(() => {}), 200);
  }

  async function loadSuggestions() {
    const seq = ++suggestSeq;
    const ids = [...state.members.keys()];
    const metricList = el("suggest-metric");
    const euclidList = el("suggest-euclid");
    const het = el("heterogeneity");
    if (!ids.length) {
      metricList.replaceChildren();
      euclidList.replaceChildren();
      het.textContent = "";
      return;
    }
    let query = `k=8&members=${ids.join(",")}`;
    if (state.groupId !== null) {
      // A saved group: send only the unsaved changes, so large groups keep a short URL.
      const added = ids.filter((id) => !state.original.has(id));
      const removed = [...state.original].filter((id) => !state.members.has(id));
      query = `k=8&group=${state.groupId}&members=${added.join(",")}&remove=${removed.join(",")}`;
    }
    const r = await api(`${suggestionsUrl}?${query}`);
    if (seq !== suggestSeq || !r.ok) return;
    const data = await r.json();
    el("metric-title").textContent = data.metric
      ? `Under the current metric (${data.metric.label}${data.metric.is_published ? ", published" : ""})`
      : "Under the current metric (none fitted yet)";
    const fill = (list, items, why) => {
      list.replaceChildren();
      for (const item of items) list.appendChild(itemButton(item, "Add", () => addMember(item)));
      if (!items.length) {
        const li = document.createElement("li");
        li.className = "muted";
        li.textContent = why;
        list.appendChild(li);
      }
    };
    const none = "None: every item of the pool is in the group.";
    fill(metricList, data.nearest_metric, data.metric ? none : "Appears once a metric is fitted.");
    fill(euclidList, data.nearest_euclid, none);
    // The explanation says what the number means and how random groups of this size score.
    const h = data.heterogeneity;
    het.textContent = h.warn ? `Warning: ${h.explanation}` : h.explanation;
    het.className = `heterogeneity ${h.warn ? "warn" : "muted"}`;
  }

  // --- Groups ---------------------------------------------------------------------------------

  async function loadGroups() {
    const r = await api(groupsUrl);
    if (!r.ok) return;
    const groups = await r.json();
    const list = el("groups");
    list.replaceChildren();
    for (const g of groups) {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "link";
      button.textContent = `${g.name} (${g.size})`;
      button.addEventListener("click", () => {
        if (g.id !== state.groupId && mayDiscard(`Opening “${g.name}”:`)) openGroup(g.id);
      });
      if (g.id === state.groupId) li.classList.add("current");
      li.appendChild(button);
      list.appendChild(li);
    }
  }

  function renderHistory(history) {
    const list = el("history");
    list.replaceChildren();
    for (const edit of history || []) {
      const li = document.createElement("li");
      const what = edit.item ? edit.item.key : edit.detail;
      const when = new Date(edit.created_at).toLocaleString();
      li.textContent = `r${edit.revision} ${edit.action} ${what || ""} — ${edit.user || "import"}, ${when}`;
      list.appendChild(li);
    }
  }

  function load(group) {
    state.groupId = group ? group.id : null;
    state.members = new Map((group ? group.members : []).map((m) => [m.id, m]));
    state.original = new Set(state.members.keys());
    state.originalName = group ? group.name : "";
    el("group-name").value = state.originalName;
    el("save").textContent = group ? "Save changes" : "Save group";
    renderHistory(group ? group.history : []);
    renderMembers();
    loadGroups();
  }

  async function openGroup(id) {
    const r = await api(`${groupsUrl}${id}/`);
    if (!r.ok) {
      setStatus(`Could not open the group (HTTP ${r.status}).`, "error");
      return;
    }
    load(await r.json());
    setStatus("", "");
  }

  async function save() {
    const name = el("group-name").value.trim();
    if (!name) {
      setStatus("Give the group a name first.", "error");
      el("group-name").focus();
      return;
    }
    const ids = [...state.members.keys()];
    if (!ids.length) {
      setStatus("An empty group cannot be saved: add at least one item.", "error");
      return;
    }
    let r;
    if (state.groupId === null) {
      r = await api(groupsUrl, { method: "POST", body: JSON.stringify({ name, members: ids }) });
    } else {
      const body = {
        add: ids.filter((id) => !state.original.has(id)),
        remove: [...state.original].filter((id) => !state.members.has(id)),
      };
      if (name !== state.originalName) body.name = name;
      r = await api(`${groupsUrl}${state.groupId}/`, { method: "PATCH", body: JSON.stringify(body) });
    }
    let data = null;
    try {
      data = await r.json();
    } catch (e) {
      data = {};
    }
    if (!r.ok) {
      const message = data.detail || Object.entries(data).map(([k, v]) => `${k}: ${v}`).join("; ");
      setStatus(`Not saved: ${message || `HTTP ${r.status}`}`, "error");
      return;
    }
    load(data);
    setStatus(`Saved “${data.name}” with ${data.members.length} items (revision ${data.revision}).`, "good");
  }

  el("save").addEventListener("click", () => save().catch(() => setStatus("Saving failed; try again.", "error")));
  el("new-group").addEventListener("click", () => {
    if (!mayDiscard("New group:")) {
      setStatus("Kept your unsaved changes.", "");
      return;
    }
    load(null);
    setStatus("", "");
    el("group-name").focus();
  });
  // Start with a new, empty group; keep whatever was typed before this script ran.
  renderMembers();
  loadGroups();
})();
