// Draws each <figure class="chart"> with Chart.js from the JSON beside its canvas; the
// table under it holds the same numbers (the page without JavaScript). Bars differ by
// pattern of border as well as colour, so no series is told apart by colour alone.
(function () {
  "use strict";
  var COLOURS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3"];
  var DASHES = [[], [6, 3], [2, 2], [8, 2, 2, 2], [1, 3]];
  function draw(root) {
    if (typeof Chart === "undefined") { return; }
    var figures = (root || document).querySelectorAll("figure.chart");
    for (var i = 0; i < figures.length; i++) {
      var fig = figures[i];
      if (fig.dataset.drawn) { continue; }
      var spec = JSON.parse(fig.querySelector("script.chart-data").textContent);
      var datasets = spec.series.map(function (s, k) {
        return {
          label: s.label, data: s.data, borderWidth: 2,
          backgroundColor: spec.type === "line" ? "transparent" : COLOURS[k % 5] + "99",
          borderColor: COLOURS[k % 5], borderDash: DASHES[k % 5], pointStyle: ["circle", "rect", "triangle", "cross", "star"][k % 5]
        };
      });
      new Chart(fig.querySelector("canvas"), {
        type: spec.type,
        data: { labels: spec.labels, datasets: datasets },
        options: { animation: false, responsive: true, maintainAspectRatio: false,
                   plugins: { legend: { labels: { usePointStyle: true } } } }
      });
      fig.dataset.drawn = "1";
      fig.classList.add("drawn");
    }
  }
  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:afterSettle", function (e) { draw(e.target); });
})();
