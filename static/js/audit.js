// The audit page: poll the audit's status while it runs (reload when done), and count the
// violations selected for "ask the annotators".
(function () {
  "use strict";
  const box = document.getElementById("audit-progress");
  if (box) {
    const bar = document.getElementById("audit-bar");
    const stage = document.getElementById("audit-stage");
    const poll = () => {
      fetch(box.dataset.url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then((r) => (r.ok ? r.json() : null))
        .then((data) => {
          if (!data) return;
          if (data.status === "done" || data.status === "failed") {
            window.location.reload();
            return;
          }
          bar.value = data.progress || 0;
          bar.textContent = String(data.progress || 0);
          stage.textContent = data.stage || (data.status === "queued" ? "waiting for a worker" : data.status);
        })
        .catch(() => {})
        .finally(() => window.setTimeout(poll, 1000));
    };
    window.setTimeout(poll, 500);
  }
  const form = document.getElementById("ask-form");
  const counter = document.getElementById("selected-count");
  if (form && counter) {
    const boxes = () => Array.from(form.querySelectorAll("input[name=violation]:not([disabled])"));
    const count = () => {
      counter.textContent = `${boxes().filter((b) => b.checked).length} selected`;
    };
    form.addEventListener("change", count);
    const all = document.getElementById("select-page");
    if (all) {
      all.addEventListener("click", () => {
        boxes().forEach((b) => { b.checked = true; });
        count();
      });
    }
    count();
  }
})();
