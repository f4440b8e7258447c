// Drift over versions: ‖ΔΣ‖ to previous / published, principal angles, held-out
// log-likelihood, and one effect-size chart per method (a line per WEAT test).
(function () {
  "use strict";
  const data = fmCharts.data();
  const config = fmCharts.config;
  // Versions as categories "#id" in id order, so methods share one axis without gaps; each
  // chart's axis holds the versions of the methods it draws (no tick for a FACE version on a
  // chart only EXPLORE has values for).
  const categoriesOf = (shown) => shown.flatMap((m) => data.series[m].ids)
    .sort((a, b) => a - b).map((id) => "#" + id);
  const layout = (title, extra, shown) => fmCharts.layout(title, {
    margin: { t: 40, r: 10, b: 50, l: 55 },
    height: 320,
    xaxis: { title: { text: "version" }, type: "category", categoryorder: "array",
      categoryarray: categoriesOf(shown || methods) },
  }, extra);
  const methods = Object.keys(data.series).sort();
  const xs = (s) => s.ids.map((id) => "#" + id);
  const line = (name, s, key, dash) => ({
    type: "scatter", mode: "lines+markers", name: name, x: xs(s), y: s[key],
    text: s.labels, connectgaps: false, line: { dash: dash || "solid" },
  });

  // An empty chart says so instead of showing bare axes; methods without a value get no trace
  // (and so no empty legend entry, and no x-tick).
  const hasData = (m, key) => data.series[m][key].some((v) => v !== null && v !== undefined);
  const noData = (key) => !methods.some((m) => hasData(m, key));
  const withData = (key) => methods.filter((m) => hasData(m, key));
  const traces = (key) => withData(key).map((m) => line(m, data.series[m], key));
  const empty = (text) => ({ annotations: [{ text: text, showarrow: false, xref: "paper",
    yref: "paper", x: 0.5, y: 0.5, font: { color: "#6b6b70" } }],
    xaxis: { visible: false }, yaxis: { visible: false } });

  // A published version's distance to itself (0) is no drift: a method with one version has
  // nothing to draw here.
  const moved = (m) => data.series[m].ids.length > 1 && (hasData(m, "to_previous") ||
    data.series[m].to_published.some((v) => v !== null && v !== undefined && v !== 0));
  const normMethods = methods.filter(moved);
  const norms = [];
  normMethods.forEach((m) => {
    norms.push(line(m + ": to previous", data.series[m], "to_previous"));
    norms.push(line(m + ": to published", data.series[m], "to_published", "dot"));
  });
  Plotly.newPlot("chart-norm", norms, layout("‖ΔΣ‖ / ‖Σ‖ (relative operator norm)",
    normMethods.length ? {} : empty("needs two versions of a method"), normMethods), config);
  Plotly.newPlot("chart-angles", traces("max_angle"),
    layout("Largest principal angle to the previous sensitive subspace (°)",
      noData("max_angle") ? empty("needs two versions of a method")
        : { yaxis: { rangemode: "tozero", ticksuffix: "°" } }, withData("max_angle")), config);
  Plotly.newPlot("chart-loglik", traces("heldout_loglik"),
    layout("Held-out log-likelihood", noData("heldout_loglik")
      ? empty("no held-out log-likelihood recorded (EXPLORE fits with a validation split)")
      : {}, withData("heldout_loglik")), config);

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
    }, [m]), config);
  });
})();
