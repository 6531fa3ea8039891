// Charts for /providers/ and /engines/. Progressive enhancement: the tables are the source of truth and the
// fallback; this script only reveals the chart section once it has data and Chart.js to draw it with.
(function () {
  "use strict";

  var PALETTE = ["#1b6ac9", "#c2410c", "#15803d", "#7c3aed", "#b91c1c", "#0e7490", "#a16207", "#be185d", "#4d7c0f", "#334155"];
  var MARKERS = ["circle", "rect", "triangle", "rectRot", "star", "crossRot", "rectRounded", "cross"];

  // Each target keeps one colour and one marker across all charts, whichever targets a chart leaves out.
  var slotBySlug = {};
  function slot(slug) {
    if (!(slug in slotBySlug)) { slotBySlug[slug] = Object.keys(slotBySlug).length; }
    return slotBySlug[slug];
  }
  function colour(slug) { return PALETTE[slot(slug) % PALETTE.length]; }
  function marker(slug) { return MARKERS[slot(slug) % MARKERS.length]; }
  function round(value) { return Math.round(value * 100) / 100; }
  function isNumber(value) { return typeof value === "number" && isFinite(value); }

  function formatTime(ms) {
    var date = new Date(ms);
    var pad = function (n) { return n < 10 ? "0" + n : String(n); };
    return date.getUTCFullYear() + "-" + pad(date.getUTCMonth() + 1) + "-" + pad(date.getUTCDate()) +
      " " + pad(date.getUTCHours()) + ":" + pad(date.getUTCMinutes()) + " UTC";
  }

  // One dataset per target so each keeps its own colour, marker and legend entry (not colour alone).
  function scatterDatasets(points, xKey, yKey) {
    return points
      .filter(function (point) { return isNumber(point[xKey]) && isNumber(point[yKey]); })
      .map(function (point) {
        return {
          label: point.name + (point.hardware ? " (" + point.hardware + ")" : ""),
          data: [{ x: point[xKey], y: point[yKey] }],
          backgroundColor: colour(point.slug),
          borderColor: colour(point.slug),
          pointStyle: marker(point.slug),
          pointRadius: 7,
          pointHoverRadius: 9
        };
      });
  }

  function historyDatasets(history, metric) {
    return history
      .map(function (series) {
        return {
          label: series.name,
          data: series.points
            .filter(function (point) { return isNumber(point[metric]); })
            .map(function (point) { return { x: point.t, y: point[metric] }; }),
          borderColor: colour(series.slug),
          backgroundColor: colour(series.slug),
          pointStyle: marker(series.slug),
          pointRadius: 3,
          borderWidth: 2,
          tension: 0,
          showLine: true
        };
      })
      .filter(function (dataset) { return dataset.data.length > 0; });
  }

  function axis(title, extra) {
    var options = { type: "linear", title: { display: true, text: title } };
    for (var key in extra) { options[key] = extra[key]; }
    return options;
  }

  function scatterConfig(datasets, xTitle, yTitle, xUnit, yUnit) {
    return {
      type: "scatter",
      data: { datasets: datasets },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: { x: axis(xTitle, { beginAtZero: true }), y: axis(yTitle, { beginAtZero: true }) },
        plugins: {
          legend: { position: "bottom", labels: { usePointStyle: true } },
          tooltip: {
            callbacks: {
              label: function (context) {
                return context.dataset.label + ": " + round(context.parsed.x) + " " + xUnit + ", " + round(context.parsed.y) + " " + yUnit;
              }
            }
          }
        }
      }
    };
  }

  function historyConfig(datasets, yTitle, unit, window) {
    return {
      type: "scatter",
      data: { datasets: datasets },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: {
          x: axis("Run start (UTC)", {
            min: window.from,
            max: window.to,
            ticks: { maxTicksLimit: 8, callback: function (value) { return formatTime(value).slice(5, 16); } }
          }),
          y: axis(yTitle, { beginAtZero: true })
        },
        plugins: {
          legend: { position: "bottom", labels: { usePointStyle: true } },
          tooltip: {
            callbacks: {
              label: function (context) {
                return context.dataset.label + ": " + round(context.parsed.y) + " " + unit + " at " + formatTime(context.parsed.x);
              }
            }
          }
        }
      }
    };
  }

  function emptyNote(canvas, text) {
    var note = document.createElement("p");
    note.className = "chart-empty";
    note.textContent = text;
    canvas.parentNode.replaceWith(note);
  }

  function draw() {
    var section = document.querySelector("[data-probe-charts]");
    var dataNode = document.getElementById("probe-chart-data");
    if (!section || !dataNode || typeof window.Chart === "undefined") { return; }
    var data = JSON.parse(dataNode.textContent);
    if (!data || !data.points) { return; }
    data.points.forEach(function (point) { slot(point.slug); });

    var builders = {
      "speed-vs-price": function () {
        var datasets = scatterDatasets(data.points, "blended_usd", "output_speed_tps");
        return datasets.length && scatterConfig(datasets, "Blended price (USD per 1M tokens, 3:1)", "Output speed (tok/s)", "USD", "tok/s");
      },
      "ttft-vs-speed": function () {
        var datasets = scatterDatasets(data.points, "output_speed_tps", "ttft_ms");
        return datasets.length && scatterConfig(datasets, "Output speed (tok/s)", "Time to first token (ms)", "tok/s", "ms");
      },
      "history": function (canvas) {
        var metric = canvas.getAttribute("data-metric");
        var titles = { output_speed_tps: ["Output speed (tok/s)", "tok/s"], ttft_ms: ["Time to first token (ms)", "ms"] };
        var datasets = historyDatasets(data.history || [], metric);
        return datasets.length && historyConfig(datasets, titles[metric][0], titles[metric][1], data.history_window);
      }
    };

    section.hidden = false;
    var canvases = section.querySelectorAll("canvas[data-chart]");
    Array.prototype.forEach.call(canvases, function (canvas) {
      var build = builders[canvas.getAttribute("data-chart")];
      var config = build && build(canvas);
      if (!config) {
        emptyNote(canvas, "Not enough data for this chart yet.");
        return;
      }
      new window.Chart(canvas, config);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
