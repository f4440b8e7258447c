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

  // Each label keeps its colour whatever order the counts arrive in.
  const labelColours = { comparable: "#1e7a3a", incomparable: "#b3261e", unsure: "#9a6700" };
  const labels = Object.keys(data.label_mix);
  Plotly.newPlot("chart-labels", [{
    type: "bar", x: labels, y: labels.map((l) => data.label_mix[l]),
    marker: { color: labels.map((l) => labelColours[l] || "#6b6b70") },
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

// Learning curves: this study's EXPLORE versions (held-out log-likelihood against answers, 95 %
// interval as error bars) and the benchmark's measured means per strategy (computed by the
// server; t-intervals as error bars, the yardstick as dashed lines, this study's strategy thick).
(function () {
  "use strict";
  const data = fmCharts.data();
  const config = fmCharts.config;
  const bars = (mean, low, high) => ({
    type: "data", symmetric: false, visible: true,
    array: mean.map((m, i) => (high[i] === null ? null : high[i] - m)),
    arrayminus: mean.map((m, i) => (low[i] === null ? null : m - low[i])),
  });

  const curve = data.curve;
  if (document.getElementById("chart-curve") && curve.answers.length) {
    Plotly.newPlot("chart-curve", [{
      type: "scatter", mode: "lines+markers", name: "EXPLORE",
      x: curve.answers, y: curve.loglik, text: curve.names,
      error_y: bars(curve.loglik, curve.low, curve.high),
      hovertemplate: "%{text}<br>%{x} answers<br>log-likelihood %{y:.4f}<extra></extra>",
    }], fmCharts.layout("This study's learning curve", {}, {
      xaxis: { title: { text: "answers fitted on" } },
      yaxis: { title: { text: "held-out log-likelihood" } },
      showlegend: false,
      // Where another annotator's answers came in: the held-out pairs change with them.
      shapes: (curve.annotator_changes || []).map((c) => ({
        type: "line", yref: "paper", y0: 0, y1: 1, x0: c.answers, x1: c.answers,
        line: { dash: "dot", width: 1, color: "#9a6700" },
      })),
      annotations: (curve.annotator_changes || []).map((c) => ({
        x: c.answers, yref: "paper", y: 1, yanchor: "bottom", showarrow: false,
        text: c.before + " → " + c.after + " annotators", font: { size: 10, color: "#9a6700" },
      })),
    }), config);
  }

  const measured = data.efficiency;
  if (document.getElementById("chart-efficiency") && measured) {
    const traces = measured.curves.map((c) => {
      const own = c.strategy === measured.strategy;
      return {
        type: "scatter", mode: "lines+markers",
        name: own ? c.strategy + " (this study)" : c.strategy,
        x: c.labels, y: c.mean, customdata: c.seeds,
        error_y: bars(c.mean, c.low, c.high),
        line: { width: own ? 4 : 1.5 }, marker: { size: own ? 8 : 5 },
        opacity: own ? 1 : 0.75,
        hovertemplate: c.strategy + "<br>%{x} labels<br>mean %{y:.4f} (%{customdata} seeds)" +
          "<extra></extra>",
      };
    });
    const colours = { start: "#6b6b70", full: "#1e7a3a", target: "#b3261e" };
    const names = { start: "start", full: "full data", target: "target" };
    const lines = Object.entries(measured.yardstick).map(([key, y]) => ({
      type: "line", xref: "paper", x0: 0, x1: 1, y0: y, y1: y,
      line: { dash: "dash", width: 1, color: colours[key] },
    }));
    // "target" sits just below "full data": its name goes to the left edge.
    const notes = Object.entries(measured.yardstick).map(([key, y]) => ({
      xref: "paper", x: key === "target" ? 0 : 1, xanchor: key === "target" ? "left" : "right",
      y: y, yanchor: key === "target" ? "top" : "bottom", showarrow: false,
      text: names[key], font: { size: 10, color: colours[key] },
    }));
    // Plain label counts as ticks (a log axis otherwise labels 20, 30, 40 as "2, 3, 4").
    const all = measured.curves.flatMap((c) => c.labels);
    const [lo, hi] = [Math.min(...all), Math.max(...all)];
    const ticks = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000]
      .filter((t) => t >= lo && t <= hi);
    Plotly.newPlot("chart-efficiency", traces, fmCharts.layout("Simulated studies, not this study's answers", {}, {
      xaxis: { type: "log", title: { text: "labels" }, tickvals: ticks, ticktext: ticks.map(String) },
      yaxis: { title: { text: "held-out log-likelihood" } },
      shapes: lines, annotations: notes, height: 340,
      legend: { orientation: "h", y: -0.3 },
      margin: { t: 40, r: 10, b: 90, l: 60 },
    }), config);
  }
})();
