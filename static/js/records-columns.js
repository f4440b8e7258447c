// Record columns page: the label column is hidden from annotators by default, so choosing
// another label column unticks its "shown to annotators" box and ticks the former label's
// again (both can still be changed by hand afterwards).
(() => {
  "use strict";
  const label = document.getElementById("id_label_column");
  if (!label) return;
  const box = (column) =>
    [...document.querySelectorAll("input[data-shown]")].find((b) => b.dataset.shown === column);
  let previous = label.value;
  label.addEventListener("change", () => {
    const before = box(previous);
    const now = box(label.value);
    if (before) before.checked = true;
    if (now) now.checked = false;
    previous = label.value;
  });
})();
