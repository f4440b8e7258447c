// WEAT drill-down: s(w) per target word, one bar series per metric (X words first, then Y).
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("chart-data").textContent);
  const xWords = new Set(data.x_words);
  const labels = data.words.map((w) => (xWords.has(w) ? "X · " : "Y · ") + w);
  const traces = data.series.map((s) => ({ type: "bar", name: s.name, x: labels, y: s.scores }));
  Plotly.newPlot("chart-scores", traces, {
    barmode: "group",
    height: 420,
    margin: { t: 30, r: 10, b: 120, l: 50 },
    yaxis: { title: { text: "s(w)" }, zeroline: true },
    xaxis: { tickangle: -60 },
  }, { displaylogo: false, responsive: true });
})();
