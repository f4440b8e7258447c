// Drift over versions: ‖ΔΣ‖ to previous / published, principal angles, held-out
// log-likelihood, and one effect-size chart per method (a line per WEAT test).
(function () {
  "use strict";
  const data = fmCharts.data();
  const config = fmCharts.config;
  const layout = (title, extra) => fmCharts.layout(title, {
    margin: { t: 40, r: 10, b: 50, l: 55 },
    height: 320,
    xaxis: { title: { text: "version" }, type: "category", categoryorder: "array",
      categoryarray: categories },
  }, extra);
  const methods = Object.keys(data.series).sort();
  // Versions as categories "#id" in id order, so methods share one axis without gaps.
  const allIds = methods.flatMap((m) => data.series[m].ids).sort((a, b) => a - b);
  const categories = allIds.map((id) => "#" + id);
  const xs = (s) => s.ids.map((id) => "#" + id);
  const line = (name, s, key, dash) => ({
    type: "scatter", mode: "lines+markers", name: name, x: xs(s), y: s[key],
    text: s.labels, connectgaps: false, line: { dash: dash || "solid" },
  });

  const norms = [];
  methods.forEach((m) => {
    norms.push(line(m + ": to previous", data.series[m], "to_previous"));
    norms.push(line(m + ": to published", data.series[m], "to_published", "dot"));
  });
  Plotly.newPlot("chart-norm", norms, layout("‖ΔΣ‖ / ‖Σ‖ (relative operator norm)"), config);

  // An empty chart says so instead of showing bare axes; methods without a value get no trace
  // (and so no empty legend entry).
  const hasData = (m, key) => data.series[m][key].some((v) => v !== null && v !== undefined);
  const noData = (key) => !methods.some((m) => hasData(m, key));
  const traces = (key) => methods.filter((m) => hasData(m, key))
    .map((m) => line(m, data.series[m], key));
  const empty = (text) => ({ annotations: [{ text: text, showarrow: false, xref: "paper",
    yref: "paper", x: 0.5, y: 0.5, font: { color: "#6b6b70" } }] });
  Plotly.newPlot("chart-angles", traces("max_angle"),
    layout("Largest principal angle to the previous sensitive subspace (°)",
      Object.assign({ yaxis: { rangemode: "tozero", ticksuffix: "°" } },
        noData("max_angle") ? empty("needs two versions of a method") : {})), config);
  Plotly.newPlot("chart-loglik", traces("heldout_loglik"),
    layout("Held-out log-likelihood", noData("heldout_loglik")
      ? empty("no held-out log-likelihood recorded (EXPLORE fits with a validation split)")
      : {}), config);

  const group = document.getElementById("chart-effects");
  methods.forEach((m) => {
    const effects = data.series[m].effect_sizes;
    const names = Object.keys(effects);
    if (!names.length) return;
    const div = document.createElement("div");
    div.className = "chart";
    div.id = "chart-effects-" + m;
    group.appendChild(div);
    Plotly.newPlot(div, names.map((t) => ({
      type: "scatter", mode: "lines+markers", name: t, x: xs(data.series[m]), y: effects[t],
    })), layout("WEAT effect size d, " + m, {
      height: 460, legend: { orientation: "h", y: -0.25, font: { size: 10 } },
    }), config);
  });
})();
