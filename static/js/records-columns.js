// Record columns page: the label and key columns are never part of φ, so choosing one sets its
// role to "excluded" (the label also hidden from annotators) and gives the column it replaces
// back the role and visibility it had before it was chosen (both can still be changed by hand).
(() => {
  "use strict";
  const HIDDEN = ":hidden";
  const select = (column) =>
    [...document.querySelectorAll("select[data-column]")].find((s) => s.dataset.column === column);
  const hidden = (value) => value.endsWith(HIDDEN);
  const unhidden = (value) => (hidden(value) ? value.slice(0, -HIDDEN.length) : value);
  const follow = (chooser, hide) => {
    if (!chooser) return;
    const before = new Map(); // column -> its value before it was chosen
    let previous = chooser.value;
    chooser.addEventListener("change", () => {
      const old = select(previous);
      // A column chosen before: what it was; the page's initial choice: shown again.
      if (old) old.value = before.has(previous) ? before.get(previous) : unhidden(old.value);
      const now = select(chooser.value);
      if (now) {
        before.set(chooser.value, now.value);
        now.value = "excluded" + (hide || hidden(now.value) ? HIDDEN : "");
      }
      previous = chooser.value;
    });
  };
  follow(document.getElementById("id_label_column"), true);
  follow(document.getElementById("id_key_column"), false);
})();
