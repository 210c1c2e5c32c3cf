// Applies the chosen theme before the page paints; the header button flips it.
(function () {
  "use strict";
  var saved = null;
  try { saved = localStorage.getItem("mcpgw-theme"); } catch (e) { /* storage off */ }
  if (saved === "light" || saved === "dark") document.documentElement.dataset.theme = saved;
  document.addEventListener("DOMContentLoaded", function () {
    var b = document.getElementById("theme");
    if (!b) return;
    b.addEventListener("click", function () {
      var cur = document.documentElement.dataset.theme ||
        (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
      var next = cur === "dark" ? "light" : "dark";
      document.documentElement.dataset.theme = next;
      try { localStorage.setItem("mcpgw-theme", next); } catch (e) { /* storage off */ }
    });
  });
})();
