// Dashboard mode: REST only, no WebSocket session. The page is rendered by the server; this
// script keeps the process list fresh and loads the run-log and inbox sections of a process.
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

  function processRow(process, detailUrl) {
    const status = element("span", { class: "status status-" + process.status, text: process.status });
    const statusCell = element("td", { "data-label": "Status" }, [status]);
    if (process.closeReason) statusCell.append(" ", element("small", { text: process.closeReason }));
    const updated = process.updatedAt ? new Date(process.updatedAt) : null;
    return element("tr", { "data-process": process.id }, [
      element("td", { "data-label": "Process" }, [
        element("a", { href: detailUrl + encodeURIComponent(process.id), text: process.id }),
      ]),
      statusCell,
      element("td", { "data-label": "Engine", text: process.thinkEngine }),
      element("td", { "data-label": "Recipe", text: process.recipe }),
      element("td", { "data-label": "Goal", class: "goal", text: process.goal || "—" }),
      element("td", { "data-label": "Updated" }, [
        element("time", {
          datetime: process.updatedAt || "",
          text: updated ? updated.toISOString().replace("T", " ").slice(0, 19) : "",
        }),
      ]),
    ]);
  }

  async function refreshProcesses(table) {
    const status = table.dataset.status;
    const query = new URLSearchParams({ limit: "200" });
    if (status) query.set("status", status);
    const note = document.getElementById("refresh-note");
    try {
      const { status: code, body } = await getJson(table.dataset.api + "?" + query);
      if (code !== 200 || !body) throw new Error("HTTP " + code);
      const rows = body.results.map((process) => processRow(process, table.dataset.detailUrl));
      if (!rows.length) {
        const text = "No processes" + (status ? " with status " + status : "") + ".";
        rows.push(element("tr", { class: "empty" }, [element("td", { colspan: "6", text })]));
      }
      table.tBodies[0].replaceChildren(...rows);
      table.dataset.loaded = "rest";
      if (note) note.textContent = "Refreshed from the REST API at " + new Date().toLocaleTimeString() + ".";
    } catch (error) {
      if (note) note.textContent = "Could not refresh the list: " + error.message;
    }
  }

  // --- run logs and inbox --------------------------------------------------------------------

  function describeItem(item) {
    // A run log names its trigger as an object; an inbox item has a title.
    const trigger = item.trigger && item.trigger.type;
    const label = [item.id, item.status, trigger, item.question || item.title || item.summary]
      .filter(Boolean)
      .join(" · ");
    return element("li", {}, [
      element("strong", { text: label || "item" }),
      element("pre", { class: "json", text: JSON.stringify(item, null, 2) }),
    ]);
  }

  async function loadSection(section) {
    const body = section.querySelector(".rest-body");
    let content;
    try {
      const { status, body: data } = await getJson(section.dataset.api);
      if (status === 404 && !(data && data.message)) {
        // The endpoint itself is missing: this Brain has no run logs or inbox yet.
        content = element("p", { class: "hint unavailable", text: "Not available on this Brain yet." });
        section.dataset.state = "unavailable";
      } else if (status !== 200 || !data) {
        content = element("p", { class: "error", text: (data && data.message) || "HTTP " + status });
        section.dataset.state = "error";
      } else {
        const items = Array.isArray(data) ? data : data.results || [];
        content = items.length
          ? element("ul", { class: "items" }, items.map(describeItem))
          : element("p", { class: "hint", text: "Nothing here yet." });
        section.dataset.state = "loaded";
      }
    } catch (error) {
      content = element("p", { class: "error", text: "Could not load: " + error.message });
      section.dataset.state = "error";
    }
    body.replaceChildren(content);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const table = document.getElementById("process-table");
    if (table) {
      refreshProcesses(table);
      setInterval(() => {
        if (!document.hidden) refreshProcesses(table);
      }, REFRESH_MS);
    }
    document.querySelectorAll(".rest-section").forEach(loadSection);
  });
})();
