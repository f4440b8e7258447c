// Study dashboard: answers per day (stacked by annotator), label mix, answers and median
// seconds per annotator. Data comes from the page's <script id="chart-data"> (json_script).
(function () {
  "use strict";
  const data = fmCharts.data();
  const config = fmCharts.config;
  const layout = (title, extra) => fmCharts.layout(title, {}, extra);

  const perDay = Object.entries(data.per_day).map(([name, counts]) => ({
    type: "bar", name: name, x: data.days, y: counts,
  }));
  // Days as categories: one day of data must not become an axis of milliseconds.
  Plotly.newPlot("chart-per-day", perDay, layout("Answers per day", {
    barmode: "stack", xaxis: { type: "category" },
  }), config);

  const labels = Object.keys(data.label_mix);
  Plotly.newPlot("chart-labels", [{
    type: "bar", x: labels, y: labels.map((l) => data.label_mix[l]),
    marker: { color: ["#1e7a3a", "#b3261e", "#9a6700"] },
  }], layout("Label mix"), config);

  const names = Object.keys(data.per_annotator);
  const empty = names.length ? {} : { annotations: [{ text: "no answers by people yet",
    showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5,
    font: { color: "#6b6b70" } }], xaxis: { visible: false }, yaxis: { visible: false } };
  Plotly.newPlot("chart-per-annotator", [{
    type: "bar", x: names, y: names.map((n) => data.per_annotator[n]),
  }], layout("Answers per annotator", empty), config);

  Plotly.newPlot("chart-seconds", [{
    type: "bar", x: names, y: names.map((n) => data.median_seconds[n]),
    marker: { color: "#2457c5" },
  }], layout("Median seconds per answer", Object.assign({ yaxis: { rangemode: "tozero" } },
    empty)), config);
})();
