(function () {
  "use strict";
  var q = document.getElementById("camp-q");
  var suite = document.getElementById("camp-suite");
  var status = document.getElementById("camp-status");
  var partial = document.getElementById("camp-partial");
  var shown = document.getElementById("camp-shown");
  if (!q || !suite || !status || !partial) { return; }
  var rows = Array.prototype.slice.call(document.querySelectorAll("#campaigns tr.camp"));
  function apply() {
    var text = q.value.trim().toLowerCase();
    var n = 0;
    rows.forEach(function (row) {
      var matches = text === "" || row.getAttribute("data-search").indexOf(text) >= 0;
      var okSuite = suite.value === "" || row.getAttribute("data-suites").indexOf(" " + suite.value + " ") >= 0;
      var okStatus = status.value === "" || row.getAttribute("data-status") === status.value;
      // Partial campaigns are hidden unless the toggle is on, but a search that names
      // them still finds them.
      var okPartial = partial.checked || row.getAttribute("data-partial") === "0" || text !== "";
      var visible = matches && okSuite && okStatus && okPartial;
      row.hidden = !visible;
      if (visible) { n++; }
    });
    shown.textContent = n + " of " + rows.length + " campaigns shown";
  }
  [q, suite, status, partial].forEach(function (el) {
    el.addEventListener("input", apply);
    el.addEventListener("change", apply);
  });
  if (location.hash.indexOf("#execution-") === 0) {
    var card = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (card && card.tagName === "DETAILS") { card.open = true; }
  }
  apply();
})();
