// The audit pages' curve: the violation rate over L (log scale) for each audit on the page —
// under Σ among the k neighbours within ε, under Σ among all pairs within ε (sampled), and
// under the Euclidean metric among the k neighbours — the audit's own L marked. On the
// comparison page two audits are overlaid.
(function () {
  "use strict";
  const box = document.getElementById("chart-curves");
  if (!box || !window.Plotly) return;
  const data = JSON.parse(document.getElementById("curve-data").textContent);
  const dashes = { sigma: "solid", all_pairs: "dot", euclidean: "dash" };
  const names = { sigma: "Σ, k neighbours", all_pairs: "Σ, all pairs (sampled)", euclidean: "Euclidean, k neighbours" };
  const colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
  const traces = [];
  data.series.forEach((audit, n) => {
    ["sigma", "all_pairs", "euclidean"].forEach((kind) => {
      if (!audit[kind]) return;
      traces.push({
        type: "scatter", mode: "lines", x: data.L, y: audit[kind].map((v) => (v === null ? null : 100 * v)),
        name: `${audit.name}: ${names[kind]}`,
        line: { dash: dashes[kind], color: colours[n % colours.length] },
      });
    });
  });
  const shapes = data.series.map((audit, n) => ({
    type: "line", x0: audit.lipschitz, x1: audit.lipschitz, yref: "paper", y0: 0, y1: 1,
    line: { width: 1, dash: "dot", color: colours[n % colours.length] },
  }));
  const layout = window.fmCharts
    ? window.fmCharts.layout("Violation rate over L", { height: 360 })
    : { title: { text: "Violation rate over L" }, height: 360 };
  Object.assign(layout, {
    xaxis: Object.assign({}, layout.xaxis || {}, { type: "log", title: { text: "L (score units per unit of d)" } }),
    yaxis: Object.assign({}, layout.yaxis || {}, { title: { text: "violation rate (%)" }, rangemode: "tozero" }),
    shapes: shapes,
    legend: { orientation: "h", y: -0.25 },
    margin: { t: 40, r: 10, b: 110, l: 55 },
  });
  Plotly.newPlot(box, traces, layout, { displaylogo: false, responsive: true });
  box.dataset.traces = String(traces.length);
})();
