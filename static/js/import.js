// Poll an embedding import's status endpoint and show its progress (spaces/import.html).
(function () {
  "use strict";
  const box = document.getElementById("import-status");
  if (!box) return;
  const url = box.dataset.statusUrl;
  const labels = { pending: "queued", running: "running", done: "done", failed: "failed" };
  const el = (id) => document.getElementById(id);

  function show(s) {
    box.dataset.status = s.status;
    el("import-state").textContent = labels[s.status] || s.status;
    el("import-stage").textContent = s.finished ? "" : s.stage || "";
    const bar = el("import-progress");
    if (s.total_rows) {
      bar.max = s.total_rows;
      bar.value = s.progress_rows;
    } else if (!s.finished) {
      bar.removeAttribute("value"); // indeterminate while the total is unknown
    }
    el("import-count").textContent =
      s.progress_rows.toLocaleString() + (s.total_rows ? " / " + s.total_rows.toLocaleString() : "") + " rows";
    const error = el("import-error");
    error.textContent = s.error || "";
    error.hidden = !s.error;
    if (s.space) {
      el("import-space").textContent =
        s.space.name + " (" + s.space.items.toLocaleString() + " items × " + s.space.dimension + ")";
      el("import-done").hidden = false;
    }
  }

  async function poll() {
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (response.ok) {
        const s = await response.json();
        if (s.columns_url) {
          window.location.assign(s.columns_url); // handed back: its columns page says why
          return;
        }
        show(s);
        if (s.finished) return;
      }
    } catch (e) {
      // network hiccup: try again
    }
    setTimeout(poll, 1000);
  }

  if (box.dataset.status !== "done" && box.dataset.status !== "failed") poll();
})();
