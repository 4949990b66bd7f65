/* recipesearch report: error counter, sortable tables, copy buttons. No network, no dependencies. */
(function () {
  "use strict";
  var errors = [];
  function show() {
    if (!document.body) return;
    document.body.setAttribute("data-errors", String(errors.length));
    if (errors.length) document.body.setAttribute("data-error-messages", errors.join(" | ").slice(0, 2000));
  }
  function record(message) { errors.push(String(message)); show(); }
  window.reportErrors = errors;
  window.addEventListener("error", function (e) {
    var what = e.message || ("failed to load " + (e.target && (e.target.src || e.target.href || e.target.tagName)));
    record(what);
  }, true);
  window.addEventListener("unhandledrejection", function (e) {
    record("unhandled rejection: " + (e.reason && e.reason.message ? e.reason.message : e.reason));
  });
  document.addEventListener("securitypolicyviolation", function (e) {
    record("blocked by the content security policy: " + e.violatedDirective + " " + e.blockedURI);
  });
  var consoleError = console.error;
  console.error = function () {
    record(Array.prototype.join.call(arguments, " "));
    return consoleError.apply(console, arguments);
  };

  /* Sortable tables: click a header; cells sort by data-v (numbers numerically, blanks last). */
  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var v = cell.getAttribute("data-v");
    return v === null ? cell.textContent.trim() : v;
  }
  function sortTable(table, index, numeric, descending) {
    var body = table.tBodies[0];
    if (!body) return;
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index), y = cellValue(b, index);
      if (x === "" && y === "") return 0;
      if (x === "") return 1;
      if (y === "") return -1;
      var c = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y, undefined, {numeric: true});
      return descending ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  function initSortable(table) {
    var headers = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(headers, function (th, index) {
      if (th.hasAttribute("data-nosort")) return;
      th.setAttribute("tabindex", "0");
      th.setAttribute("aria-sort", "none");
      function activate() {
        var descending = th.getAttribute("aria-sort") === "ascending";
        Array.prototype.forEach.call(headers, function (h) { if (h !== th && h.hasAttribute("aria-sort")) h.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        sortTable(table, index, th.getAttribute("data-type") === "num", descending);
      }
      th.addEventListener("click", activate);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); activate(); }
      });
    });
  }

  /* Copy buttons: the Clipboard API where allowed, else a hidden textarea + execCommand; never throws. */
  function flash(button, text) {
    button.textContent = text;
    window.setTimeout(function () { button.textContent = "Copy"; }, 1600);
  }
  function fallbackCopy(text, button) {
    var ok = false;
    try {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      ok = !!(document.execCommand && document.execCommand("copy"));
      document.body.removeChild(area);
    } catch (e) { ok = false; }
    flash(button, ok ? "Copied" : "Select and press Ctrl+C");
  }
  function copy(button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target) return;
    var text = target.textContent;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { flash(button, "Copied"); },
                                                 function () { fallbackCopy(text, button); });
        return;
      }
    } catch (e) { /* fall through */ }
    fallbackCopy(text, button);
  }

  document.addEventListener("DOMContentLoaded", function () {
    show();
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), initSortable);
    Array.prototype.forEach.call(document.querySelectorAll("button[data-copy]"), function (b) {
      b.addEventListener("click", function () { copy(b); });
    });
    document.body.setAttribute("data-report-ready", "1");
  });
})();
