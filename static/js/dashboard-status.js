// Study dashboard "computing…" page: poll the status endpoint until the figures are ready,
// then reload the page (which renders them). Backs off from 2 s to 10 s between polls.
(function () {
  "use strict";
  const box = document.querySelector("[data-status-url]");
  if (!box) return;
  let delay = 2000;
  function poll() {
    fetch(box.dataset.statusUrl, { headers: { Accept: "application/json" } })
      .then((response) => (response.ok ? response.json() : null))
      .then((status) => {
        if (status && status.ready) {
          window.location.reload();
          return;
        }
        delay = Math.min(delay * 1.5, 10000);
        window.setTimeout(poll, delay);
      })
      .catch(() => window.setTimeout(poll, 10000));
  }
  window.setTimeout(poll, delay);
})();
