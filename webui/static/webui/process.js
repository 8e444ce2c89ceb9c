// The process page: the task tree drawn by tasktree.js and the sub-processes, kept live by
// reading the REST API every POLL_MS while the process is not CLOSED. The dashboard has no
// WebSocket session, so polling is its honest way to follow a process of any session; it stops
// once the process is CLOSED (nothing changes after that) and skips hidden tabs.
"use strict";

(function () {
  const POLL_MS = 1500;

  async function getJson(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (response.status !== 200) throw new Error("HTTP " + response.status);
    return response.json();
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function childRow(child, processUrl) {
    const row = element("tr");
    row.dataset.process = child.id;
    const link = element("a", "", child.id);
    link.href = processUrl(child.id);
    const cells = [
      [link],
      [element("span", "status status-" + child.status, child.status)],
      [child.thinkEngine || ""],
      [child.recipe || ""],
      [child.goal || "—"],
    ];
    const labels = ["Process", "Status", "Engine", "Recipe", "Goal"];
    cells.forEach((content, index) => {
      const cell = element("td");
      cell.dataset.label = labels[index];
      cell.append(...content);
      row.append(cell);
    });
    return row;
  }

  document.addEventListener("DOMContentLoaded", () => {
    const section = document.getElementById("task-tree");
    const view = document.getElementById("task-tree-view");
    if (!section || !view) return;
    const processUrl = (id) => section.dataset.processUrl + encodeURIComponent(id);
    const statusBadge = document.getElementById("process-status");
    const note = document.getElementById("task-tree-note");
    const order = document.getElementById("task-tree-order");
    const childrenTable = document.getElementById("children-table");
    const raw = document.getElementById("task-tree-raw");
    let shownTree = null;

    // POST /api/processes/{id}/task-tree/{nodeId}/cancel with the page's CSRF token (the
    // REST API takes the login cookie); the next poll shows the node SKIPPED.
    async function cancelNode(nodeId, button) {
      button.disabled = true;
      const token = document.querySelector("input[name=csrfmiddlewaretoken]");
      const url = "/api/processes/" + encodeURIComponent(section.dataset.process) + "/task-tree/" + encodeURIComponent(nodeId) + "/cancel";
      try {
        const response = await fetch(url, {
          method: "POST",
          credentials: "same-origin",
          headers: { Accept: "application/json", "X-CSRFToken": token ? token.value : "" },
        });
        const body = await response.json().catch(() => ({}));
        order.textContent = response.status === 202
          ? "Cancel of " + nodeId + " sent; the tree shows it once the process has carried it out."
          : "Could not cancel " + nodeId + ": " + (body.message || "HTTP " + response.status);
      } catch (error) {
        order.textContent = "Could not cancel " + nodeId + ": " + error.message;
      }
      button.disabled = false;
      poll();
    }

    function showTree(tree) {
      const json = JSON.stringify(tree);
      if (json === shownTree) {
        window.TaskTree.tick(view);
        return;
      }
      shownTree = json;
      if (tree === null || tree === undefined) return; // the server's "no task tree" hint stays
      window.TaskTree.render(view, tree, { processUrl, onCancel: section.dataset.processStatus === "CLOSED" ? null : cancelNode });
      if (raw) raw.textContent = JSON.stringify(tree, null, 2);
      section.dataset.hasTree = "true";
    }

    function showStatus(process) {
      statusBadge.textContent = process.status;
      statusBadge.className = "status status-" + process.status;
      const reason = document.getElementById("process-close-reason");
      if (reason) reason.textContent = process.closeReason || "";
      section.dataset.processStatus = process.status;
    }

    function showChildren(processes) {
      if (!childrenTable) return;
      const mine = processes.filter((p) => p.parentId === section.dataset.process).reverse();
      const rows = mine.map((child) => childRow(child, processUrl));
      if (!rows.length) {
        const cell = element("td", "", "No sub-processes.");
        cell.colSpan = 5;
        const empty = element("tr", "empty");
        empty.append(cell);
        rows.push(empty);
      }
      childrenTable.tBodies[0].replaceChildren(...rows);
    }

    let timer = null;
    async function poll() {
      if (document.hidden) return;
      try {
        const process = await getJson(section.dataset.api);
        showStatus(process);
        showTree(process.taskTree);
        if (childrenTable) showChildren((await getJson(childrenTable.dataset.api)).results);
        if (process.status === "CLOSED") {
          clearInterval(timer);
          section.dataset.live = "stopped";
          note.textContent = "The process is CLOSED; this is its final tree.";
        } else {
          section.dataset.live = "polling";
          note.textContent = "Live: refreshed from the REST API at " + new Date().toLocaleTimeString() + ".";
        }
      } catch (error) {
        section.dataset.live = "error";
        note.textContent = "Could not refresh: " + error.message + " (trying again).";
      }
    }

    const initial = document.getElementById("task-tree-data");
    showTree(initial ? JSON.parse(initial.textContent) : null);
    if (section.dataset.processStatus === "CLOSED") {
      section.dataset.live = "stopped";
      return;
    }
    section.dataset.live = "polling";
    timer = setInterval(poll, POLL_MS);
    poll();
  });
})();
