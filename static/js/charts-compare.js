// Two versions side by side: their eigen-spectra on one chart.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("chart-data").textContent);
  const traces = [data.a, data.b].filter((v) => v.spectrum.length).map((v) => ({
    type: "scatter", mode: "lines+markers", name: v.name,
    x: v.spectrum.map((_, i) => i + 1), y: v.spectrum,
  }));
  Plotly.newPlot("chart-spectra", traces, {
    title: { text: "Eigen-spectra", font: { size: 14 } },
    height: 340,
    margin: { t: 40, r: 10, b: 45, l: 50 },
    xaxis: { title: { text: "eigenvalue rank" } },
    yaxis: { title: { text: "eigenvalue" } },
  }, { displaylogo: false, responsive: true });
})();
