// Record columns page: the label column is hidden from annotators by default, so choosing
// another label column hides it ("…, hidden") and shows the former label again ("…, shown"),
// keeping each one's role in φ (both can still be changed by hand afterwards).
(() => {
  "use strict";
  const label = document.getElementById("id_label_column");
  if (!label) return;
  const HIDDEN = ":hidden";
  const select = (column) =>
    [...document.querySelectorAll("select[data-column]")].find((s) => s.dataset.column === column);
  const role = (value) => (value.endsWith(HIDDEN) ? value.slice(0, -HIDDEN.length) : value);
  let previous = label.value;
  label.addEventListener("change", () => {
    const before = select(previous);
    const now = select(label.value);
    if (before) before.value = role(before.value);
    if (now) now.value = role(now.value) + HIDDEN;
    previous = label.value;
  });
})();
