// The task tree component, shared by the process page (REST polling) and the interactive page
// (task-tree events over the session's WebSocket). It draws the protocol's task tree object,
// {version, rootId, nodes: [{id, parentId, kind, title, goal, status, processId?, result?,
// error?, dependsOn?, attempts?, replanOf?, startedAt?, finishedAt?}]}, as nested boxes joined
// by connector lines (webui.css), one colour per status, each WORKER node linked to its worker
// process, each node's goal, result (a structured result: its summary, then all of it) and
// error in an expandable box. Sibling WORKER nodes that may run at once (none depends on
// another) are drawn side by side; a re-plan is marked as one. A tree of another shape (nested
// `children`) is drawn the same way.
"use strict";

window.TaskTree = (function () {
  const STATUSES = ["PENDING", "RUNNING", "BLOCKED", "DONE", "FAILED", "SKIPPED"];
  const FINISHED = ["DONE", "FAILED", "SKIPPED"];
  const CANCELLABLE = ["PENDING", "RUNNING", "BLOCKED"];

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // Flat nodes with parent ids, whatever shape the engine sent.
  function flatten(tree) {
    if (tree && Array.isArray(tree.nodes)) {
      return { rootId: tree.rootId || null, nodes: tree.nodes.filter((n) => n && typeof n === "object") };
    }
    const nodes = [];
    let counter = 0;
    function walk(node, parentId) {
      if (!node || typeof node !== "object") return;
      counter += 1;
      const id = String(node.id || "node" + counter);
      nodes.push({ ...node, id, parentId, title: node.title || node.name || node.goal || node.text || id });
      for (const child of Array.isArray(node.children) ? node.children : []) walk(child, id);
    }
    for (const node of Array.isArray(tree) ? tree : [tree]) walk(node, null);
    return { rootId: nodes.length ? nodes[0].id : null, nodes };
  }

  function seconds(startedAt, finishedAt) {
    if (!startedAt) return null;
    const start = Date.parse(startedAt);
    const end = finishedAt ? Date.parse(finishedAt) : Date.now();
    if (Number.isNaN(start) || Number.isNaN(end)) return null;
    return Math.max(0, (end - start) / 1000);
  }

  function formatSeconds(value) {
    if (value === null) return "";
    if (value < 60) return value.toFixed(1) + " s";
    const minutes = Math.floor(value / 60);
    if (minutes < 60) return minutes + " min " + Math.round(value % 60) + " s";
    return Math.floor(minutes / 60) + " h " + (minutes % 60) + " min";
  }

  function shown(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  function legend() {
    const list = element("ul", "tree-legend");
    list.setAttribute("aria-label", "status colours");
    for (const status of STATUSES) {
      const item = element("li", "node-" + status);
      item.append(element("span", "swatch"), " " + status.toLowerCase());
      list.append(item);
    }
    return list;
  }

  function nodeBox(node, options, open) {
    const status = STATUSES.includes(node.status) ? node.status : "PENDING";
    const box = element("details", "tree-box");
    box.open = open.has(node.id);
    box.addEventListener("toggle", () => (box.open ? open.add(node.id) : open.delete(node.id)));
    const summary = element("summary");
    if (node.kind) summary.append(element("span", "kind", node.kind));
    summary.append(element("span", "node-title", node.title || node.id));
    if (Array.isArray(node.replanOf) && node.replanOf.length) {
      summary.append(element("span", "badge replan", "re-plan of " + node.replanOf.join(", ")));
    }
    if (Number(node.attempts) > 1) summary.append(element("span", "badge attempt", "attempt " + node.attempts));
    summary.append(element("span", "status node-status status-" + status, node.status || status));
    const duration = element("span", "duration");
    if (node.startedAt) {
      duration.dataset.startedAt = node.startedAt;
      if (node.finishedAt) duration.dataset.finishedAt = node.finishedAt;
      duration.textContent = formatSeconds(seconds(node.startedAt, node.finishedAt));
    }
    summary.append(duration);
    if (node.processId) {
      const link = element("a", "worker-link", node.processId);
      link.href = options.processUrl(node.processId);
      link.title = "the worker process of " + node.id;
      summary.append(link);
    }
    box.append(summary);
    const facts = element("dl", "facts");
    const fact = (name, value, isError) => {
      if (value === undefined || value === null || value === "") return;
      facts.append(element("dt", "", name));
      const dd = element("dd", isError ? "error" : "");
      dd.append(typeof value === "string" && !value.includes("\n") ? value : element("pre", "json", shown(value)));
      facts.append(dd);
    };
    fact("Node", node.id);
    fact("Goal", node.goal && node.goal !== node.title ? node.goal : null);
    fact("Depends on", Array.isArray(node.dependsOn) && node.dependsOn.length ? node.dependsOn.join(", ") : null);
    fact("Inbox item", node.inboxItemId);
    fact("Started", node.startedAt);
    fact("Finished", node.finishedAt);
    if (node.result && typeof node.result === "object" && typeof node.result.summary === "string") {
      // A worker's structured result: its summary in words, then the whole of it.
      facts.append(element("dt", "", "Result"));
      const dd = element("dd");
      dd.append(element("p", "result-summary", node.result.summary), element("pre", "json", shown(node.result)));
      facts.append(dd);
    } else {
      fact("Result", node.result);
    }
    fact("Error", node.error, true);
    if (!facts.children.length) facts.append(element("dd", "hint", "Nothing more about this node yet."));
    box.append(facts);
    if (options.onCancel && CANCELLABLE.includes(node.status)) {
      // The person's order to cancel a node that has not finished (the page that draws the
      // tree sends it; the engine skips the node, or stops its running worker).
      const cancel = element("button", "secondary cancel-node", "Cancel this node");
      cancel.type = "button";
      cancel.addEventListener("click", () => options.onCancel(node.id, cancel));
      box.append(cancel);
    }
    return box;
  }

  // Draw `tree` into `container`, keeping which nodes were expanded across redraws.
  function render(container, tree, options) {
    const settings = { processUrl: (id) => "/processes/" + encodeURIComponent(id), ...(options || {}) };
    const open = container.taskTreeOpen || (container.taskTreeOpen = new Set());
    const { rootId, nodes } = flatten(tree);
    const byId = new Map(nodes.map((node) => [String(node.id), node]));
    const children = new Map();
    const roots = [];
    for (const node of nodes) {
      const parent = node.parentId === null || node.parentId === undefined ? null : String(node.parentId);
      if (parent !== null && byId.has(parent) && parent !== String(node.id)) {
        if (!children.has(parent)) children.set(parent, []);
        children.get(parent).push(node);
      } else {
        roots.push(node);
      }
    }
    roots.sort((a, b) => (String(a.id) === rootId ? -1 : String(b.id) === rootId ? 1 : 0));
    const drawn = new Set();
    function item(node) {
      const status = STATUSES.includes(node.status) ? node.status : "PENDING";
      const li = element("li", "tree-node node-" + status);
      li.dataset.node = node.id;
      li.dataset.status = node.status || "";
      if (node.kind) li.dataset.kind = node.kind;
      li.append(nodeBox(node, settings, open));
      const below = children.get(String(node.id));
      if (below && below.length) li.append(branch(below));
      return li;
    }
    // Runs of sibling WORKER nodes none of which depends on another: they run at once.
    function groups(list) {
      const runs = [];
      let run = [];
      for (const node of list) {
        const ids = new Set(run.map((other) => String(other.id)));
        const depends = (Array.isArray(node.dependsOn) ? node.dependsOn : []).some((id) => ids.has(String(id)));
        if (node.kind === "WORKER" && !depends && (!run.length || run[0].kind === "WORKER")) {
          run.push(node);
          continue;
        }
        if (run.length) runs.push(run);
        run = [node];
      }
      if (run.length) runs.push(run);
      return runs;
    }
    function branch(list) {
      const ul = element("ul", "tree-level");
      for (const run of groups(list.filter((node) => !drawn.has(node)))) {
        for (const node of run) drawn.add(node); // a cycle of parent ids: draw each node once
        if (run.length < 2 || run[0].kind !== "WORKER") {
          for (const node of run) ul.append(item(node));
          continue;
        }
        const group = element("li", "tree-parallel");
        group.append(element("span", "parallel-label hint", run.length + " workers, run at once"));
        const row = element("ul", "tree-level parallel");
        for (const node of run) row.append(item(node));
        group.append(row);
        ul.append(group);
      }
      return ul;
    }
    const drawing = element("div", "tree-drawing");
    if (!nodes.length) {
      drawing.append(element("p", "hint", "The task tree has no nodes yet."));
    } else {
      const top = branch(roots);
      top.setAttribute("role", "tree");
      drawing.append(top);
    }
    const done = nodes.filter((node) => FINISHED.includes(node.status)).length;
    const running = nodes.filter((node) => node.kind === "WORKER" && node.status === "RUNNING").length;
    const failed = nodes.filter((node) => node.status === "FAILED").length;
    const replans = nodes.filter((node) => Array.isArray(node.replanOf) && node.replanOf.length).length;
    let said = done + " of " + nodes.length + " nodes finished";
    if (running > 1) said += " · " + running + " running at once";
    if (failed) said += " · " + failed + " failed";
    if (replans) said += " · " + replans + (replans === 1 ? " re-plan" : " re-plans");
    const summary = element("p", "tree-summary hint", said);
    container.replaceChildren(legend(), summary, drawing);
    container.dataset.nodes = String(nodes.length);
    container.dataset.rendered = String((Number(container.dataset.rendered) || 0) + 1);
  }

  // Running nodes' durations grow between redraws.
  function tick(container) {
    for (const span of container.querySelectorAll(".duration[data-started-at]:not([data-finished-at])")) {
      span.textContent = formatSeconds(seconds(span.dataset.startedAt, null));
    }
  }

  return { render, tick, flatten, STATUSES };
})();
