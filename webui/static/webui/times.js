// Every <time datetime="…"> of a page in the reader's own time zone and relative to now
// ("14:03 · 3 min ago"), the full local date and time as its tooltip; refreshed each half
// minute, and for times a page's script adds later (window.WebuiTimes.show(node)).
"use strict";

window.WebuiTimes = (function () {
  const UNITS = [
    ["year", 365 * 86400],
    ["month", 30 * 86400],
    ["week", 7 * 86400],
    ["day", 86400],
    ["hour", 3600],
    ["minute", 60],
    ["second", 1],
  ];
  const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto", style: "short" });

  function ago(date) {
    const seconds = (date.getTime() - Date.now()) / 1000;
    for (const [unit, size] of UNITS) {
      if (Math.abs(seconds) >= size || unit === "second") {
        return relative.format(Math.round(seconds / size), unit);
      }
    }
    return "";
  }

  function clock(date) {
    const today = new Date().toDateString() === date.toDateString();
    const time = date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
    return today ? time : date.toLocaleDateString(undefined, { day: "numeric", month: "short" }) + " " + time;
  }

  function show(node) {
    const value = node.getAttribute("datetime");
    if (!value) return;
    const date = new Date(value);
    if (Number.isNaN(date.getTime())) return;
    node.textContent = clock(date) + " · " + ago(date);
    node.title = date.toLocaleString();
    node.dataset.local = "true";
  }

  function showAll(root) {
    (root || document).querySelectorAll("time[datetime]").forEach(show);
  }

  document.addEventListener("DOMContentLoaded", () => {
    showAll();
    setInterval(showAll, 30000);
  });
  return { show, showAll };
})();
