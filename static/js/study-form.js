// Study settings: the instructions' live preview (rendered and sanitised by the server, as the
// study page shows them), refreshed 300 ms after typing stops.
(() => {
  "use strict";
  const text = document.querySelector("textarea[data-preview]");
  const preview = document.getElementById("instructions-preview");
  if (!text || !preview) return;
  const csrfMeta = document.querySelector('meta[name="csrf-token"]').content;
  const csrf = () => (document.cookie.match(/(?:^|; )csrftoken=([^;]+)/) || [])[1] || csrfMeta;
  let timer = null;
  let sent = 0;

  async function render() {
    const mine = ++sent;
    const body = new URLSearchParams({ text: text.value });
    try {
      const r = await fetch(preview.dataset.url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-CSRFToken": csrf() },
        body,
      });
      const data = await r.json();
      if (mine !== sent) return; // a newer preview is on its way
      if (r.ok) preview.innerHTML = data.html || '<p class="muted">Nothing to preview.</p>';
      else preview.textContent = data.detail || `Preview failed (HTTP ${r.status}).`;
    } catch (e) {
      preview.textContent = "Preview unavailable.";
    }
  }

  text.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(render, 300);
  });
  render();
})();

// The tag list shows the chosen space's tags only (each option names its spaces in
// data-spaces); a tag of another space is unselected when the space changes.
(() => {
  "use strict";
  const space = document.getElementById("id_space");
  const tags = document.getElementById("id_tags");
  if (!space || !tags) return;
  function filter() {
    const chosen = space.value;
    for (const option of tags.options) {
      const fits = !chosen || (option.dataset.spaces || "").split(" ").includes(chosen);
      option.hidden = !fits;
      option.disabled = !fits;
      if (!fits) option.selected = false;
    }
  }
  space.addEventListener("change", filter);
  filter();
})();
