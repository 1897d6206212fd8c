/* Nebula's status page: live refresh while something is in flight, and relative times.
 * The server says how often to refresh (body[data-refresh], seconds; 0: not at all). A
 * refresh fetches the same page and swaps <main>, keeping open <details> open. No state
 * ever changes from here: the page only reads. */
(function () {
  "use strict";

  var UNITS = [[86400, "d"], [3600, "h"], [60, "min"], [1, "s"]];
  var timer = null;

  function relative(iso) {
    var then = Date.parse(iso);
    if (isNaN(then)) { return null; }
    var seconds = Math.round((Date.now() - then) / 1000);
    var ahead = seconds < 0;
    seconds = Math.abs(seconds);
    if (seconds < 5) { return "just now"; }
    for (var i = 0; i < UNITS.length; i++) {
      if (seconds >= UNITS[i][0]) {
        var amount = Math.floor(seconds / UNITS[i][0]) + " " + UNITS[i][1];
        return ahead ? "in " + amount : amount + " ago";
      }
    }
    return "just now";
  }

  function updateTimes() {
    var nodes = document.querySelectorAll("time[data-relative]");
    for (var i = 0; i < nodes.length; i++) {
      var text = relative(nodes[i].getAttribute("datetime") || "");
      if (text) { nodes[i].textContent = text; }
    }
  }

  function swap(selector, doc) {
    var current = document.querySelector(selector);
    var fresh = doc.querySelector(selector);
    // Unchanged parts stay as they are: no churn, and a live region is not re-announced.
    if (current && fresh && current.innerHTML !== fresh.innerHTML) {
      current.innerHTML = fresh.innerHTML;
    }
  }

  function schedule() {
    if (timer !== null) { clearTimeout(timer); timer = null; }
    var seconds = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
    if (seconds > 0) { timer = setTimeout(refresh, seconds * 1000); }
  }

  function refresh() {
    timer = null;
    fetch(window.location.href, { headers: { "Accept": "text/html" }, cache: "no-store" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var open = [];
        var details = document.querySelectorAll("details[open][id]");
        for (var i = 0; i < details.length; i++) { open.push(details[i].id); }
        swap("main", doc);
        swap("#footer", doc);
        swap("#live-status", doc);
        document.title = doc.title;
        document.body.setAttribute("data-refresh", doc.body.getAttribute("data-refresh") || "0");
        for (var j = 0; j < open.length; j++) {
          var found = document.getElementById(open[j]);
          if (found) { found.open = true; }
        }
        updateTimes();
      })
      .catch(function () { /* the server may be restarting: the next refresh tries again */ })
      .then(schedule);
  }

  document.addEventListener("DOMContentLoaded", function () {
    updateTimes();
    schedule();
    setInterval(updateTimes, 15000);
  });
})();
