// Dashboard mode: no WebSocket session. The page is rendered by the server, its processes
// grouped by tree (webui/dashboard.py); this script keeps it fresh by reading the same page
// again every few seconds and putting its trees in place. The server fills only the folds
// named in `open`: the script asks for the ones the person has open, so a fold opened is
// filled at once and stays open (and filled) across refreshes.
"use strict";

(function () {
  const REFRESH_MS = 5000;
  let running = false;
  let again = false;

  function openFolds(table) {
    return Array.from(table.querySelectorAll("details.tree-fold[open]")).map((fold) => fold.dataset.root);
  }

  function pageAddress(table) {
    const query = new URLSearchParams(location.search);
    const opened = openFolds(table);
    if (opened.length) query.set("open", opened.join(","));
    else query.delete("open");
    const text = query.toString();
    return location.pathname + (text ? "?" + text : "");
  }

  async function refreshTrees(table) {
    if (running) {
      again = true;
      return;
    }
    running = true;
    const note = document.getElementById("refresh-note");
    const asked = new Set(openFolds(table));
    try {
      const response = await fetch(pageAddress(table), {
        credentials: "same-origin",
        headers: { Accept: "text/html" },
      });
      if (response.status !== 200) throw new Error("HTTP " + response.status);
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      const freshTable = fresh.getElementById("process-table");
      if (!freshTable) throw new Error("no process list in the answer");
      // Opened or closed meanwhile: as the person left it (a fold opened just now and not
      // filled yet is asked for again below).
      const opened = new Set(openFolds(table));
      freshTable.querySelectorAll("details.tree-fold").forEach((fold) => {
        fold.open = opened.has(fold.dataset.root);
      });
      table.querySelectorAll(":scope > tbody").forEach((body) => body.remove());
      table.append(...freshTable.querySelectorAll(":scope > tbody"));
      const pager = document.getElementById("pager");
      const freshPager = fresh.getElementById("pager");
      if (pager && freshPager) pager.replaceChildren(...freshPager.childNodes);
      if (window.WebuiTimes) table.querySelectorAll("time").forEach((node) => window.WebuiTimes.show(node));
      table.dataset.loaded = "live";
      if (note) note.textContent = "Refreshed at " + new Date().toLocaleTimeString() + ".";
      const unfilled = table.querySelectorAll("details.tree-fold[open]:not([data-filled])");
      if (Array.from(unfilled).some((fold) => !asked.has(fold.dataset.root))) again = true;
    } catch (error) {
      if (note) note.textContent = "Could not refresh the list: " + error.message;
    } finally {
      running = false;
      if (again) {
        again = false;
        refreshTrees(table);
      }
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const table = document.getElementById("process-table");
    if (!table) return;
    // A fold opened that the server has not filled: read the page with it open now. (A
    // toggle event does not bubble: it is caught on its way down.)
    table.addEventListener(
      "toggle",
      (event) => {
        const fold = event.target;
        if (fold.matches && fold.matches("details.tree-fold") && fold.open && !fold.dataset.filled) {
          refreshTrees(table);
        }
      },
      true,
    );
    refreshTrees(table);
    setInterval(() => {
      if (!document.hidden) refreshTrees(table);
    }, REFRESH_MS);
  });
})();
