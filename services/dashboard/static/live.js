// Live status: the page's objects follow the server-sent events of /api/v1/stream.
// Without JavaScript the pages still work; they show the status as it was when rendered.
(function () {
  "use strict";
  var indicator = document.querySelector("[data-live-status]");
  function say(text) { if (indicator) { indicator.textContent = text; } }
  if (!window.EventSource) { say("Status updates: reload the page to refresh."); return; }
  var source = new EventSource("/api/v1/stream");
  source.addEventListener("ready", function () { say("Status updates: live."); });
  source.addEventListener("unavailable", function (message) {
    var data = JSON.parse(message.data);
    say("Status updates: the API server did not answer for " + data.kind + "; retrying.");
  });
  source.addEventListener("resumed", function () { say("Status updates: live."); });
  source.addEventListener("status", function (message) {
    var data = JSON.parse(message.data);
    var cells = document.querySelectorAll('[data-key="' + CSS.escape(data.key) + '"]');
    cells.forEach(function (cell) {
      var field = cell.getAttribute("data-field");
      if (field === "phase") { cell.textContent = data.deleted ? "Deleted" : (data.phase || "—"); }
      else if (field === "observedGeneration") { cell.textContent = data.observedGeneration === null ? "never" : String(data.observedGeneration); }
      else if (field in data) { cell.textContent = data[field] === null || data[field] === "" ? "—" : String(data[field]); }
    });
  });
  source.onerror = function () {
    // A refused stream (429: too many live pages of this user; 503: of the dashboard) closes the
    // EventSource for good; any other failure is retried by the browser.
    if (source.readyState === EventSource.CLOSED) {
      say("Status updates stopped: the dashboard refused them (too many live pages open?); reload the page to try again.");
    } else {
      say("Status updates: reconnecting…");
    }
  };
})();
