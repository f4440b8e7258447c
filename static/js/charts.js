// Shared by the chart pages: the page's data (<script id="chart-data">, json_script), plotly's
// config, and a layout with a title (defaults overridable per page and per chart).
// Charts take the page's colours (its CSS variables), so they follow the light or dark theme.
(function () {
  "use strict";
  const css = (name, fallback) =>
    getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
  const axis = () => ({ gridcolor: css("--line", "#e2e2e0"), zerolinecolor: css("--line", "#e2e2e0") });
  window.fmCharts = {
    data: () => JSON.parse(document.getElementById("chart-data").textContent),
    config: { displaylogo: false, responsive: true },
    layout: (title, base, extra) => {
      const merged = Object.assign({
        title: { text: title, font: { size: 14 } },
        margin: { t: 40, r: 10, b: 50, l: 50 },
        height: 300,
        paper_bgcolor: css("--card", "#fff"),
        plot_bgcolor: css("--card", "#fff"),
        font: { color: css("--fg", "#1d1d1f") },
      }, base || {}, extra || {});
      merged.xaxis = Object.assign(axis(), merged.xaxis || {});
      merged.yaxis = Object.assign(axis(), merged.yaxis || {});
      return merged;
    },
  };
})();
