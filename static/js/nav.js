// Every page: the top bar's "Menu" button on narrow screens, and tables that scroll sideways
// inside themselves (phones) made reachable from the keyboard.
(() => {
  "use strict";
  const toggle = document.querySelector(".topbar .menu-toggle");
  if (toggle) {
    toggle.addEventListener("click", () => {
      const open = toggle.closest(".topbar").classList.toggle("open");
      toggle.setAttribute("aria-expanded", String(open));
    });
  }

  // A table wider than the screen scrolls within itself (app.css); it takes keyboard focus
  // then, so arrow keys scroll it, and is named after its heading.
  function scrollableTables() {
    for (const table of document.querySelectorAll("table.grid")) {
      const scrolls = table.scrollWidth > table.clientWidth + 1;
      if (scrolls && !table.hasAttribute("tabindex")) {
        table.setAttribute("tabindex", "0");
        table.dataset.scrollFocus = "1";
        if (!table.hasAttribute("aria-label") && !table.caption) {
          let heading = table.previousElementSibling;
          while (heading && !/^H[1-6]$/.test(heading.tagName)) heading = heading.previousElementSibling;
          table.setAttribute("aria-label", heading ? heading.textContent.trim() : "table");
        }
      } else if (!scrolls && table.dataset.scrollFocus) {
        table.removeAttribute("tabindex");
        delete table.dataset.scrollFocus;
      }
    }
  }
  scrollableTables();
  window.addEventListener("resize", scrollableTables);
  window.fmScrollableTables = scrollableTables; // pages that build tables late call it again
})();
