// Engines compared on published evidence: output tok/s per GPU against tok/s per user (or TTFT), one line per
// engine and version. Progressive enhancement: the table of each comparison holds the same points and is what a
// reader without JavaScript sees; this script only reveals the charts.
(function () {
  "use strict";
  var PALETTE = ["#1b6ac9", "#c2410c", "#15803d", "#7c3aed", "#b91c1c", "#0e7490", "#a16207", "#be185d"];
  var MARKERS = ["circle", "rect", "triangle", "rectRot", "star", "crossRot", "rectRounded", "cross"];

  function draw(figure) {
    var source = document.getElementById(figure.getAttribute("data-evidence-chart"));
    if (!source || typeof window.Chart === "undefined") { return; }
    var chart = JSON.parse(source.textContent);
    var datasets = chart.series.map(function (series, index) {
      var points = series.points.slice().sort(function (a, b) { return a.x - b.x; });
      return {
        label: series.label + (series.measured_here ? " (measured here)" : ""),
        data: points.map(function (point) { return { x: point.x, y: point.y, load: point.load }; }),
        borderColor: PALETTE[index % PALETTE.length],
        backgroundColor: PALETTE[index % PALETTE.length],
        borderDash: series.measured_here ? [6, 4] : [],
        pointStyle: MARKERS[index % MARKERS.length],
        pointRadius: 5,
        showLine: true,
        tension: 0
      };
    }).filter(function (dataset) { return dataset.data.length > 0; });
    if (!datasets.length) { return; }
    new window.Chart(figure.querySelector("canvas"), {
      type: "scatter",
      data: { datasets: datasets },
      options: {
        maintainAspectRatio: false,
        animation: false,
        scales: {
          x: { title: { display: true, text: chart.x_label }, beginAtZero: true },
          y: { title: { display: true, text: chart.y_label }, beginAtZero: true }
        },
        plugins: {
          tooltip: {
            callbacks: {
              label: function (context) {
                var point = context.raw;
                return context.dataset.label + " — " + point.load + ": " + Math.round(point.y) + " tok/s per GPU";
              }
            }
          }
        }
      }
    });
    figure.hidden = false;
    figure.classList.add("is-drawn");
  }

  function drawAll() { document.querySelectorAll("[data-evidence-chart]").forEach(draw); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", drawAll); } else { drawAll(); }
})();
