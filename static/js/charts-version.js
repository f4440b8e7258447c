// Metric version: Sigma's eigen-spectrum (descending); the small eigenvalues are the
// directions the metric ignores.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("chart-data").textContent);
  const index = data.spectrum.map((_, i) => i + 1);
  Plotly.newPlot("chart-spectrum", [{
    type: "bar", x: index, y: data.spectrum, marker: { color: "#2457c5" },
  }], {
    title: { text: "Eigen-spectrum of Sigma", font: { size: 14 } },
    height: 320,
    margin: { t: 40, r: 10, b: 45, l: 50 },
    xaxis: { title: { text: "eigenvalue rank" } },
    yaxis: { title: { text: "eigenvalue" } },
  }, { displaylogo: false, responsive: true });
})();
