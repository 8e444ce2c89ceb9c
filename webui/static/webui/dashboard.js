// Dashboard mode: REST only, no WebSocket session. The page is rendered by the server; this
// script keeps the process list fresh.
"use strict";

(function () {
  const REFRESH_MS = 5000;

  function element(tag, attributes, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (name === "text") node.textContent = value;
      else node.setAttribute(name, value);
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  async function getJson(url) {
    const response = await fetch(url, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    });
    const isJson = (response.headers.get("Content-Type") || "").includes("application/json");
    return { status: response.status, body: isJson ? await response.json() : null };
  }

  // --- process list ------------------------------------------------------------------------

  function updatedTime(value) {
    const node = element("time", { datetime: value || "", text: value || "" });
    if (window.WebuiTimes) window.WebuiTimes.show(node);
    return node;
  }

  function lastTaskCell(task) {
    // A task-tree node (its id first) or a turn, and its status; "—" before the first.
    if (!task) return element("td", { "data-label": "Last task", class: "last-task", text: "—" });
    const title = (task.id ? task.id + " " : "") + task.title + " ";
    return element("td", { "data-label": "Last task", class: "last-task" }, [
      title,
      element("small", { text: task.status }),
    ]);
  }

  function processRow(process, detailUrl) {
    const status = element("span", { class: "status status-" + process.status, text: process.status });
    const statusCell = element("td", { "data-label": "Status" }, [status]);
    if (process.closeReason) statusCell.append(" ", element("small", { text: process.closeReason }));
    return element("tr", { "data-process": process.id }, [
      element("td", { "data-label": "Process" }, [
        element("a", { href: detailUrl + encodeURIComponent(process.id), text: process.id }),
      ]),
      statusCell,
      element("td", { "data-label": "Engine", text: process.thinkEngine }),
      element("td", { "data-label": "Recipe", text: process.recipe }),
      element("td", { "data-label": "Goal", class: "goal", text: process.goal || "—" }),
      lastTaskCell(process.lastTask),
      element("td", { "data-label": "Updated" }, [updatedTime(process.updatedAt)]),
    ]);
  }

  async function refreshProcesses(table) {
    const status = table.dataset.status;
    const query = new URLSearchParams({ limit: "200" });
    if (status) query.set("status", status);
    if (table.dataset.category) query.set("category", table.dataset.category);
    const note = document.getElementById("refresh-note");
    try {
      const { status: code, body } = await getJson(table.dataset.api + "?" + query);
      if (code !== 200 || !body) throw new Error("HTTP " + code);
      const rows = body.results.map((process) => processRow(process, table.dataset.detailUrl));
      if (!rows.length) {
        const text = "No processes" + (status ? " with status " + status : "") + ".";
        rows.push(element("tr", { class: "empty" }, [element("td", { colspan: "7", text })]));
      }
      table.tBodies[0].replaceChildren(...rows);
      table.dataset.loaded = "rest";
      if (note) note.textContent = "Refreshed from the REST API at " + new Date().toLocaleTimeString() + ".";
    } catch (error) {
      if (note) note.textContent = "Could not refresh the list: " + error.message;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const table = document.getElementById("process-table");
    if (table) {
      refreshProcesses(table);
      setInterval(() => {
        if (!document.hidden) refreshProcesses(table);
      }, REFRESH_MS);
    }
  });
})();
