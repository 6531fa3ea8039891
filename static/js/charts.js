// Charts drawn with the vendored Chart.js from the tables beside them. The table is the chart's data and its
// fallback: without JavaScript (or without Chart.js) the reader sees the same points as a table. A chart is a
// <figure data-chart="scatter|bar|lines"> holding a [data-chart-canvas] box and a table whose rows carry
// data-label, data-x and data-y (and data-series for lines); rows without a number are left out, never drawn as 0.
(function () {
  "use strict";

  var PALETTE = ["#1b6ac9", "#c2410c", "#15803d", "#7c3aed", "#b91c1c", "#0e7490", "#a16207", "#be185d", "#4d7c0f", "#334155"];
  var MARKERS = ["circle", "rect", "triangle", "rectRot", "star", "crossRot", "rectRounded", "cross"];

  // Each label keeps one colour and one marker across every chart of the page.
  var slotByLabel = {};
  function slot(label) {
    if (!(label in slotByLabel)) { slotByLabel[label] = Object.keys(slotByLabel).length; }
    return slotByLabel[label];
  }
  function colour(label) { return PALETTE[slot(label) % PALETTE.length]; }
  function marker(label) { return MARKERS[slot(label) % MARKERS.length]; }
  function number(text) {
    if (text === null || text === "") { return null; }
    var value = Number(text);
    return isFinite(value) ? value : null;
  }
  function round(value) { return Math.round(value * 100) / 100; }
  function utc(ms) {
    var date = new Date(ms);
    var pad = function (n) { return n < 10 ? "0" + n : String(n); };
    return date.getUTCFullYear() + "-" + pad(date.getUTCMonth() + 1) + "-" + pad(date.getUTCDate()) +
      " " + pad(date.getUTCHours()) + ":" + pad(date.getUTCMinutes()) + " UTC";
  }

  function points(figure) {
    var rows = figure.querySelectorAll("tr[data-label]");
    var found = [];
    Array.prototype.forEach.call(rows, function (row) {
      var point = {
        label: row.getAttribute("data-label"),
        series: row.getAttribute("data-series") || row.getAttribute("data-label"),
        note: row.getAttribute("data-note") || "",
        x: number(row.getAttribute("data-x")),
        y: number(row.getAttribute("data-y"))
      };
      if (point.y !== null && (point.x !== null || figure.getAttribute("data-chart") === "bar")) { found.push(point); }
    });
    return found;
  }

  function axis(title, extra) {
    var options = { type: "linear", beginAtZero: true, title: { display: true, text: title } };
    for (var key in extra) { options[key] = extra[key]; }
    return options;
  }

  function legend() { return { position: "bottom", labels: { usePointStyle: true } }; }

  var builders = {
    // One dataset per point, so each keeps its own colour, marker and legend entry (not colour alone).
    scatter: function (figure, found, xUnit, yUnit) {
      return {
        type: "scatter",
        data: {
          datasets: found.map(function (point) {
            return {
              label: point.label, data: [{ x: point.x, y: point.y, note: point.note }],
              backgroundColor: colour(point.series), borderColor: colour(point.series),
              pointStyle: marker(point.series), pointRadius: 7, pointHoverRadius: 9
            };
          })
        },
        options: {
          scales: { x: axis(figure.getAttribute("data-x-label")), y: axis(figure.getAttribute("data-y-label")) },
          plugins: {
            legend: legend(),
            tooltip: { callbacks: { label: function (context) {
              var raw = context.raw;
              return context.dataset.label + ": " + round(raw.x) + " " + xUnit + ", " + round(raw.y) + " " + yUnit +
                (raw.note ? " (" + raw.note + ")" : "");
            } } }
          }
        }
      };
    },
    bar: function (figure, found, xUnit, yUnit) {
      return {
        type: "bar",
        data: {
          labels: found.map(function (point) { return point.label; }),
          datasets: [{
            label: figure.getAttribute("data-y-label"),
            data: found.map(function (point) { return point.y; }),
            backgroundColor: found.map(function (point) { return colour(point.series); })
          }]
        },
        options: {
          indexAxis: "y",
          scales: { x: axis(figure.getAttribute("data-y-label")), y: { type: "category" } },
          plugins: {
            legend: { display: false },
            tooltip: { callbacks: { label: function (context) {
              var note = found[context.dataIndex].note;
              return round(context.parsed.x) + " " + yUnit + (note ? " (" + note + ")" : "");
            } } }
          }
        }
      };
    },
    // Lines over time: x is a UTC timestamp in milliseconds; one dataset per series.
    lines: function (figure, found, xUnit, yUnit) {
      var bySeries = {};
      var order = [];
      found.forEach(function (point) {
        if (!(point.series in bySeries)) { bySeries[point.series] = []; order.push(point.series); }
        bySeries[point.series].push({ x: point.x, y: point.y });
      });
      var from = number(figure.getAttribute("data-x-min"));
      var to = number(figure.getAttribute("data-x-max"));
      return {
        type: "scatter",
        data: {
          datasets: order.map(function (series) {
            return {
              label: series, data: bySeries[series].sort(function (a, b) { return a.x - b.x; }),
              borderColor: colour(series), backgroundColor: colour(series), pointStyle: marker(series),
              pointRadius: 3, borderWidth: 2, tension: 0, showLine: true
            };
          })
        },
        options: {
          scales: {
            x: axis(figure.getAttribute("data-x-label"), {
              beginAtZero: false, min: from === null ? undefined : from, max: to === null ? undefined : to,
              ticks: { maxTicksLimit: 8, callback: function (value) { return utc(value).slice(5, 16); } }
            }),
            y: axis(figure.getAttribute("data-y-label"))
          },
          plugins: {
            legend: legend(),
            tooltip: { callbacks: { label: function (context) {
              return context.dataset.label + ": " + round(context.parsed.y) + " " + yUnit + " at " + utc(context.parsed.x);
            } } }
          }
        }
      };
    }
  };

  function draw(figure) {
    var kind = figure.getAttribute("data-chart");
    var box = figure.querySelector("[data-chart-canvas]");
    var build = builders[kind];
    var found = points(figure);
    if (!box || !build || !found.length) { return; }
    var config = build(figure, found, figure.getAttribute("data-x-unit") || "", figure.getAttribute("data-y-unit") || "");
    config.options.responsive = true;
    config.options.maintainAspectRatio = false;
    config.options.animation = false;
    if (kind === "bar") { box.style.height = Math.max(140, 48 + 34 * found.length) + "px"; }
    var canvas = document.createElement("canvas");
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", figure.getAttribute("data-aria-label") || "Chart of the table below");
    box.appendChild(canvas);
    box.hidden = false;
    figure.classList.add("is-drawn");
    new window.Chart(canvas, config);
  }

  function drawAll() {
    if (typeof window.Chart === "undefined") { return; }
    Array.prototype.forEach.call(document.querySelectorAll("figure[data-chart]"), draw);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
