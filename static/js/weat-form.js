// WEAT test form: each word set gets a search box over the space's words (the item search API,
// by the start of the key); a found word is added to the set's list with its button or Enter.
// The lists stay plain text areas, so pasting a list works as well, and the page works without
// this script (the server checks every word and lists those not in the space).
(() => {
  "use strict";
  const form = document.getElementById("weat-test-form");
  if (!form) return;
  const itemsUrl = form.dataset.itemsUrl;
  const space = form.dataset.space;

  function words(area) {
    return area.value
      .split(/[\n,]/)
      .map((w) => w.trim())
      .filter(Boolean);
  }

  function add(area, key) {
    const current = words(area);
    if (!current.includes(key)) current.push(key);
    area.value = current.join("\n");
  }

  for (const set of form.querySelectorAll("fieldset.weat-set")) {
    const box = set.querySelector(".weat-search");
    const input = set.querySelector(".weat-search-input");
    const list = set.querySelector(".weat-results");
    const area = set.querySelector("textarea");
    let timer = null;
    let seq = 0;
    let found = [];
    box.hidden = false;

    function render() {
      list.replaceChildren();
      if (input.value.trim() && !found.length) {
        const li = document.createElement("li");
        li.className = "muted";
        li.textContent = `No word of the space starts with “${input.value.trim()}”.`;
        list.append(li);
        return;
      }
      for (const item of found) {
        const li = document.createElement("li");
        const name = document.createElement("span");
        name.textContent = item.key;
        const button = document.createElement("button");
        button.type = "button";
        button.textContent = "Add";
        button.setAttribute("aria-label", `Add ${item.key}`);
        button.addEventListener("click", () => {
          add(area, item.key);
          input.value = "";
          found = [];
          render();
          input.focus();
        });
        li.append(name, " ", button);
        list.append(li);
      }
    }

    async function search() {
      const query = input.value.trim();
      const mine = ++seq;
      if (!query) {
        found = [];
        render();
        return;
      }
      const url = `${itemsUrl}?space=${encodeURIComponent(space)}&q=${encodeURIComponent(query)}&limit=8`;
      const response = await fetch(url, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (mine !== seq) return;
      found = response.ok ? await response.json() : [];
      if (mine !== seq) return;
      render();
    }

    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(search, 150);
    });
    input.addEventListener("keydown", (event) => {
      if (event.key !== "Enter") return;
      event.preventDefault(); // Enter adds the first word found; it never submits the form
      if (found.length) {
        add(area, found[0].key);
        input.value = "";
        found = [];
        render();
      }
    });
  }
})();
