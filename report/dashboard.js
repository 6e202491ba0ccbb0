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

// The cell filter: verdict, failure class and text hide the cards and the "Needs
// attention" entries that do not match; the filter lives in the URL's fragment
// (#verdict=failed&class=candidate_failure&q=text), so a filtered view can be shared.
(function () {
  "use strict";
  var q = document.getElementById("cell-q");
  var verdict = document.getElementById("cell-verdict");
  var klass = document.getElementById("cell-class");
  var shown = document.getElementById("cell-shown");
  if (!q || !verdict || !klass) { return; }
  var cards = Array.prototype.slice.call(document.querySelectorAll("details.card[data-verdict]"));
  var items = Array.prototype.slice.call(document.querySelectorAll("#triage-list li"));
  function matches(el) {
    var text = q.value.trim().toLowerCase();
    return (verdict.value === "" || el.getAttribute("data-verdict") === verdict.value) &&
      (klass.value === "" || el.getAttribute("data-class") === klass.value) &&
      (text === "" || el.getAttribute("data-search").indexOf(text) >= 0);
  }
  function apply(record) {
    var n = 0;
    var selected = cards.filter(function (c) { return c.getAttribute("data-verdict") !== ""; });
    cards.forEach(function (c) {
      var ok = c.getAttribute("data-verdict") === "" ? (verdict.value === "" && klass.value === "" && q.value.trim() === "") : matches(c);
      c.hidden = !ok;
      if (ok && c.getAttribute("data-verdict") !== "") { n++; }
    });
    items.forEach(function (li) { li.hidden = !matches(li); });
    shown.textContent = n + " of " + selected.length + " cells shown";
    if (record) {
      var p = [];
      if (verdict.value) { p.push("verdict=" + encodeURIComponent(verdict.value)); }
      if (klass.value) { p.push("class=" + encodeURIComponent(klass.value)); }
      if (q.value.trim()) { p.push("q=" + encodeURIComponent(q.value.trim())); }
      history.replaceState(null, "", p.length ? "#" + p.join("&") : location.pathname + location.search);
    }
  }
  function choose(select, value) {
    for (var i = 0; i < select.options.length; i++) {
      if (select.options[i].value === value) { select.value = value; return; }
    }
  }
  function readHash() {
    var h = location.hash.slice(1);
    if (h.indexOf("execution-") === 0 || h.indexOf("=") < 0) { return; }
    verdict.value = ""; klass.value = ""; q.value = "";
    h.split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i < 0) { return; }
      var k = kv.slice(0, i), v = decodeURIComponent(kv.slice(i + 1));
      if (k === "verdict") { choose(verdict, v); }
      if (k === "class") { choose(klass, v); }
      if (k === "q") { q.value = v; }
    });
  }
  [q, verdict, klass].forEach(function (el) {
    el.addEventListener("input", function () { apply(true); });
    el.addEventListener("change", function () { apply(true); });
  });
  window.addEventListener("hashchange", function () {
    if (location.hash.indexOf("#execution-") === 0) {
      // A link from "Needs attention" opens the card it points at.
      var card = document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (card && card.tagName === "DETAILS") { card.hidden = false; card.open = true; }
      return;
    }
    readHash();
    apply(false);
  });
  readHash();
  apply(false);
})();
