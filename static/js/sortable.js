// Sortable columns for tables marked data-sortable: a header with data-sort="number|text" becomes a button.
// Cells may carry data-sort-value; empty values always sort last. Without JavaScript the server's order stands.
(function () {
  "use strict";

  function value(row, index, kind) {
    var cell = row.children[index];
    if (!cell) { return null; }
    var raw = cell.hasAttribute("data-sort-value") ? cell.getAttribute("data-sort-value") : cell.textContent.trim();
    if (raw === "") { return null; }
    if (kind === "number") {
      var number = Number(raw);
      return isFinite(number) ? number : null;
    }
    return raw.toLowerCase();
  }

  function enhance(table) {
    var headers = table.querySelectorAll("thead th[data-sort]");
    Array.prototype.forEach.call(headers, function (header) {
      var index = Array.prototype.indexOf.call(header.parentNode.children, header);
      var kind = header.getAttribute("data-sort");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort-button";
      while (header.firstChild) { button.appendChild(header.firstChild); }
      header.appendChild(button);
      button.addEventListener("click", function () {
        var ascending = header.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(headers, function (other) { other.removeAttribute("aria-sort"); });
        header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var left = value(a, index, kind);
          var right = value(b, index, kind);
          if (left === null || right === null) { return (left === null) - (right === null); }
          var order = left < right ? -1 : left > right ? 1 : 0;
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  }

  function enhanceAll() {
    Array.prototype.forEach.call(document.querySelectorAll("table[data-sortable]"), enhance);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", enhanceAll);
  } else {
    enhanceAll();
  }
})();
