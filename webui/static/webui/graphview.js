// The knowledge graph view of the memory page (docs/memory.md): the nodes (memory items and
// document chunks) at the ends of the listed edges, placed by a deterministic force layout
// (start on a circle in id order, a fixed number of steps, no randomness: the same edges give
// the same picture), edges drawn as SVG lines with one colour per type, invalid ones dashed.
"use strict";

window.GraphView = (function () {
  const SVG = "http://www.w3.org/2000/svg";
  const SIZE = 600; // the drawing's square, in SVG units
  const RADIUS = 11; // a node's circle
  const STEPS = 220;
  const COLOURS = {
    supports: "#1f7a3d",
    contradicts: "#b3261e",
    derived_from: "#7c3aed",
    mentions: "#2456c7",
  };
  const NODE_COLOURS = { item: "#0d9488", chunk: "#d97706" };

  function svg(tag, attributes) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
    return node;
  }

  function kindOf(id) {
    return id.startsWith("mem_") ? "item" : "chunk";
  }

  // The distinct ends of the edges, in a stable order (by kind, then number).
  function nodesOf(edges) {
    const ids = new Set();
    for (const edge of edges) {
      ids.add(edge.fromId);
      ids.add(edge.toId);
    }
    const key = (id) => id.replace(/\d+/g, (digits) => digits.padStart(12, "0"));
    return [...ids].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  }

  // Fruchterman-Reingold with a cooling step, from a circle: deterministic.
  function layout(ids, edges) {
    const places = new Map();
    const count = ids.length;
    const ring = SIZE * 0.38;
    ids.forEach((id, index) => {
      const angle = -Math.PI / 2 + (2 * Math.PI * index) / Math.max(count, 1);
      places.set(id, { x: count === 1 ? 0 : ring * Math.cos(angle), y: count === 1 ? 0 : ring * Math.sin(angle) });
    });
    if (count < 3) return places;
    const ideal = Math.max(40, Math.min(140, (SIZE * 0.9) / Math.sqrt(count)));
    const links = edges.map((edge) => [places.get(edge.fromId), places.get(edge.toId)]);
    const points = ids.map((id) => places.get(id));
    const reach = 2 * ideal;
    let heat = SIZE / 10;
    for (let step = 0; step < STEPS; step++) {
      const moves = points.map(() => ({ x: 0, y: 0 }));
      for (let i = 0; i < count; i++) {
        for (let j = i + 1; j < count; j++) {
          let dx = points[i].x - points[j].x;
          let dy = points[i].y - points[j].y;
          let distance = Math.hypot(dx, dy);
          if (distance < 0.01) {
            dx = 0.01 * (i - j);
            dy = 0.01;
            distance = Math.hypot(dx, dy);
          }
          // Beyond a few ideal lengths nodes no longer push (else separate parts of the
          // graph drift far apart and the fit squeezes each of them into a dot).
          if (distance > reach) continue;
          const push = (ideal * ideal) / distance;
          moves[i].x += (dx / distance) * push;
          moves[i].y += (dy / distance) * push;
          moves[j].x -= (dx / distance) * push;
          moves[j].y -= (dy / distance) * push;
        }
      }
      const index = new Map(points.map((point, i) => [point, i]));
      for (const [a, b] of links) {
        const dx = a.x - b.x;
        const dy = a.y - b.y;
        const distance = Math.max(Math.hypot(dx, dy), 0.01);
        const pull = (distance * distance) / ideal;
        const i = index.get(a);
        const j = index.get(b);
        moves[i].x -= (dx / distance) * pull;
        moves[i].y -= (dy / distance) * pull;
        moves[j].x += (dx / distance) * pull;
        moves[j].y += (dy / distance) * pull;
      }
      points.forEach((point, i) => {
        // A weak pull to the middle keeps unconnected parts on the drawing.
        moves[i].x -= point.x * 0.1;
        moves[i].y -= point.y * 0.1;
        const length = Math.max(Math.hypot(moves[i].x, moves[i].y), 0.01);
        const move = Math.min(length, heat);
        point.x += (moves[i].x / length) * move;
        point.y += (moves[i].y / length) * move;
      });
      heat = Math.max(heat * 0.97, 0.5);
    }
    // Fit the result's bounding box into the drawing, centred, keeping its proportions.
    const xs = points.map((point) => point.x);
    const ys = points.map((point) => point.y);
    const [left, right, top, bottom] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    const span = Math.max(right - left, bottom - top, 1);
    const scale = Math.min((SIZE - 2 * (RADIUS + 40)) / span, 2);
    const [middleX, middleY] = [(left + right) / 2, (top + bottom) / 2];
    for (const point of points) {
      point.x = Math.round((point.x - middleX) * scale * 10) / 10;
      point.y = Math.round((point.y - middleY) * scale * 10) / 10;
    }
    return places;
  }

  const LABEL_CHARS = 22;

  // A node's label: the start of its text (a memory item's key, else its snippet), the id
  // until that text has been read.
  function labelOf(id, labels) {
    const text = (labels && labels.get(id)) || id;
    return text.length > LABEL_CHARS ? text.slice(0, LABEL_CHARS - 1) + "…" : text;
  }

  // Draws the graph into `container`: `edges` are all listed edges, `shown(edge)` whether an
  // edge is drawn (the type filter), `onSelect(id)` a node's click; `extra.labels` (id → text)
  // names the nodes, `extra.hits` (a Set of ids) marks a search's hits.
  function draw(container, edges, shown, selectedId, onSelect, extra) {
    const labels = (extra && extra.labels) || null;
    const hits = (extra && extra.hits) || new Set();
    const ids = nodesOf(edges);
    if (!ids.length) {
      const empty = document.createElement("p");
      empty.className = "hint";
      empty.textContent = "No edges yet: the brain linker, processes and people add them.";
      container.replaceChildren(empty);
      return;
    }
    const places = layout(ids, edges);
    const half = SIZE / 2;
    const picture = svg("svg", {
      viewBox: [-half, -half, SIZE, SIZE].join(" "),
      role: "img",
      "aria-label": "knowledge graph: " + ids.length + " nodes",
      class: "graph-svg",
    });
    const defs = svg("defs");
    for (const [type, colour] of Object.entries(COLOURS)) {
      const marker = svg("marker", {
        id: "arrow-" + type, viewBox: "0 0 10 10", refX: 10, refY: 5,
        markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse",
      });
      marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: colour }));
      defs.append(marker);
    }
    picture.append(defs);
    for (const edge of edges) {
      if (!shown(edge)) continue;
      const from = places.get(edge.fromId);
      const to = places.get(edge.toId);
      const dx = to.x - from.x;
      const dy = to.y - from.y;
      const length = Math.max(Math.hypot(dx, dy), 0.01);
      // The line stops at the target's circle, so its arrow shows.
      const line = svg("line", {
        x1: from.x, y1: from.y,
        x2: Math.round((to.x - (dx / length) * (RADIUS + 2)) * 10) / 10,
        y2: Math.round((to.y - (dy / length) * (RADIUS + 2)) * 10) / 10,
        stroke: COLOURS[edge.type] || "#6b7280",
        "marker-end": "url(#arrow-" + edge.type + ")",
        class: "graph-edge" + (edge.validTo ? " invalid" : ""),
        "data-edge": edge.id,
        "data-type": edge.type,
        "data-from": edge.fromId,
        "data-to": edge.toId,
      });
      if (edge.validTo) line.setAttribute("stroke-dasharray", "6 4");
      const title = svg("title");
      title.textContent = edge.fromId + " " + edge.type + " " + edge.toId + " (" + edge.confidence + ")" + (edge.validTo ? ", invalid" : "");
      line.append(title);
      picture.append(line);
    }
    for (const id of ids) {
      const { x, y } = places.get(id);
      const kind = kindOf(id);
      const group = svg("g", {
        class: "graph-node node-" + kind + (id === selectedId ? " selected" : "") + (hits.has(id) ? " hit" : ""),
        "data-node": id,
        "data-kind": kind,
        tabindex: 0,
        role: "button",
        "aria-label": ((labels && labels.get(id)) || "") + " (" + id + ")",
      });
      if (hits.has(id)) group.append(svg("circle", { cx: x, cy: y, r: RADIUS + 5, class: "graph-hit-ring" }));
      group.append(svg("circle", { cx: x, cy: y, r: RADIUS, fill: NODE_COLOURS[kind] }));
      const tip = svg("title");
      tip.textContent = ((labels && labels.get(id)) || "") + " · " + id;
      group.append(tip);
      const label = svg("text", { x, y: y + RADIUS + 12, "text-anchor": "middle", class: "graph-label" });
      label.textContent = labelOf(id, labels);
      group.append(label);
      group.addEventListener("click", () => onSelect(id));
      group.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          onSelect(id);
        }
      });
      picture.append(group);
    }
    container.replaceChildren(picture);
  }

  function markSelected(container, id) {
    for (const group of container.querySelectorAll(".graph-node")) {
      group.classList.toggle("selected", group.dataset.node === id);
    }
  }

  return { draw, markSelected, layout, nodesOf, labelOf, COLOURS, NODE_COLOURS };
})();
