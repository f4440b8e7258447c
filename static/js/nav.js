// Top bar on narrow screens: the "Menu" button shows and hides the navigation.
(() => {
  "use strict";
  const toggle = document.querySelector(".topbar .menu-toggle");
  if (!toggle) return;
  toggle.addEventListener("click", () => {
    const open = toggle.closest(".topbar").classList.toggle("open");
    toggle.setAttribute("aria-expanded", String(open));
  });
})();
