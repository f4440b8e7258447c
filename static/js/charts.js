// Shared by the chart pages: the page's data (<script id="chart-data">, json_script), plotly's
// config, and a layout with a title (defaults overridable per page and per chart).
(function () {
  "use strict";
  window.fmCharts = {
    data: () => JSON.parse(document.getElementById("chart-data").textContent),
    config: { displaylogo: false, responsive: true },
    layout: (title, base, extra) => Object.assign({
      title: { text: title, font: { size: 14 } },
      margin: { t: 40, r: 10, b: 50, l: 50 },
      height: 300,
    }, base || {}, extra || {}),
  };
})();
