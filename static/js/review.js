// The adjudication page: 1 resolves the pair shown as comparable, 2 as incomparable, G ticks
// "also a gold pair". Keys typed into the filters are theirs.
(function () {
  "use strict";
  const form = document.getElementById("decision");
  if (!form) return;
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const target = event.target;
    if (target && target.closest && target.closest("input, select, textarea")) return;
    if (event.key === "g" || event.key === "G") {
      const gold = document.getElementById("decision-gold");
      if (gold) gold.checked = !gold.checked;
      return;
    }
    const button = form.querySelector(`button[data-key="${event.key}"]`);
    if (!button) return;
    event.preventDefault();
    form.requestSubmit(button);
  });
})();
