// Throughput-against-latency curves of the benchmark lab. Progressive enhancement: the table under the charts
// holds the same points and is what a reader without JavaScript sees; this script only reveals the charts.
(function () {
  "use strict";
  var PALETTE = ["#1b6ac9", "#c2410c", "#15803d", "#7c3aed", "#b91c1c", "#0e7490", "#a16207", "#be185d"];
  var MARKERS = ["circle", "rect", "triangle", "rectRot", "star", "crossRot", "rectRounded", "cross"];
  function isNumber(value) { return typeof value === "number" && isFinite(value); }

  function draw() {
    var source = document.getElementById("sweep-chart-data");
    var grid = document.querySelector("[data-sweep-charts]");
    if (!source || !grid || typeof window.Chart === "undefined") { return; }
    var chart = JSON.parse(source.textContent);
    var drawn = 0;
    grid.querySelectorAll("canvas[data-sweep-chart]").forEach(function (canvas) {
      var metric = canvas.getAttribute("data-sweep-chart");
      var datasets = chart.series.map(function (series, index) {
        return {
          label: series.label,
          data: series.points
            .filter(function (point) { return isNumber(point.output_tps) && isNumber(point[metric]); })
            .map(function (point) { return { x: point.output_tps, y: point[metric], level: point.level }; }),
          borderColor: PALETTE[index % PALETTE.length],
          backgroundColor: PALETTE[index % PALETTE.length],
          pointStyle: MARKERS[index % MARKERS.length],
          pointRadius: 5,
          showLine: true,
          tension: 0
        };
      }).filter(function (dataset) { return dataset.data.length > 0; });
      if (!datasets.length) { return; }
      drawn += 1;
      new window.Chart(canvas, {
        type: "scatter",
        data: { datasets: datasets },
        options: {
          maintainAspectRatio: false,
          animation: false,
          scales: {
            x: { title: { display: true, text: "Output tokens/s (whole level)" }, beginAtZero: true },
            y: { title: { display: true, text: metric === "ttft_p50" ? "TTFT p50 (ms)" : "TPOT p50 (ms)" }, beginAtZero: true }
          },
          plugins: {
            tooltip: {
              callbacks: {
                label: function (context) {
                  var point = context.raw;
                  return context.dataset.label + " — level " + point.level + ": " + Math.round(point.x) + " tok/s, " +
                    Math.round(point.y * 10) / 10 + " ms";
                }
              }
            }
          }
        }
      });
    });
    if (drawn) { grid.hidden = false; }
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", draw); } else { draw(); }
})();
