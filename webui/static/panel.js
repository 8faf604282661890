// jitflow panel: progressive enhancement only. Every table is complete and sortable
// without this file (server-side ?sort=...&order=...); this adds in-page sorting and an
// optional auto-refresh.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) return numeric ? -Infinity : "";
    var raw = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent.trim();
    if (numeric) { var n = parseFloat(raw); return isNaN(n) ? -Infinity : n; }
    return raw.toLowerCase();
  }

  function sortTable(table, th) {
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.classList.contains("num");
    var asc = th.classList.contains("sorted") ? !th.classList.contains("asc") : !numeric;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
      return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.classList.remove("sorted", "asc", "desc"); });
    th.classList.add("sorted", asc ? "asc" : "desc");
  }

  function init() {
    document.querySelectorAll("table.sortable th[data-sort]").forEach(function (th) {
      th.addEventListener("click", function (event) {
        if (event.metaKey || event.ctrlKey || event.shiftKey) return;  // let the link open elsewhere
        event.preventDefault();
        sortTable(th.closest("table"), th);
      });
    });
    var box = document.getElementById("autorefresh");
    if (box) {
      var key = "jitflow-autorefresh";
      box.checked = window.localStorage && localStorage.getItem(key) === "1";
      var timer = null;
      var arm = function () {
        if (timer) clearTimeout(timer);
        timer = box.checked ? setTimeout(function () { location.reload(); }, 10000) : null;
      };
      box.addEventListener("change", function () {
        if (window.localStorage) localStorage.setItem(key, box.checked ? "1" : "0");
        arm();
      });
      arm();
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
