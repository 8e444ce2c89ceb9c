// The memory page: documents (listed, uploaded as a file or pasted text, deleted) and the
// knowledge graph (graphview.js draws it). Everything goes over REST with the login cookie;
// writes send the page's CSRF token.
"use strict";

(function () {
  const root = document.getElementById("memory");
  if (!root) return;
  const notice = document.getElementById("memory-notice");
  const csrf = root.querySelector("input[name=csrfmiddlewaretoken]");
  const MAX_EDGES = 1000;

  function element(tag, attributes, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (name === "text") node.textContent = value;
      else node.setAttribute(name, value);
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  function say(text, isError) {
    notice.textContent = text;
    notice.classList.toggle("error", Boolean(isError));
  }

  async function call(url, options) {
    const headers = { Accept: "application/json", ...((options || {}).headers || {}) };
    if (options && options.method && options.method !== "GET") headers["X-CSRFToken"] = csrf ? csrf.value : "";
    const response = await fetch(url, { credentials: "same-origin", ...(options || {}), headers });
    const isJson = (response.headers.get("Content-Type") || "").includes("application/json");
    const body = isJson ? await response.json() : null;
    return { status: response.status, body };
  }

  function problem(body, status) {
    return (body && body.message) || "HTTP " + status;
  }

  // --- documents ---------------------------------------------------------------------------

  const list = document.getElementById("document-list");
  const form = document.getElementById("document-form");

  function size(bytes) {
    if (bytes < 1024) return bytes + " B";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KiB";
    return (bytes / 1024 / 1024).toFixed(1) + " MiB";
  }

  function documentRow(item) {
    const remove = element("button", { type: "button", class: "danger small", "data-delete": item.id, text: "Delete" });
    remove.addEventListener("click", () => deleteDocument(item, remove));
    return element("tr", { "data-document": item.id }, [
      element("td", { "data-label": "Title", class: "goal" }, [element("strong", { text: item.title }), " ", element("small", { text: item.id })]),
      element("td", { "data-label": "Project", text: item.projectId }),
      element("td", { "data-label": "Type", text: item.mediaType }),
      element("td", { "data-label": "Chunks", class: "chunks", text: String(item.chunks) }),
      element("td", { "data-label": "Size", text: size(item.bytes) }),
      element("td", { "data-label": "Uploaded" }, [
        element("time", { datetime: item.createdAt, text: item.createdAt.replace("T", " ").slice(0, 19) }),
      ]),
      element("td", { "data-label": "" }, [remove]),
    ]);
  }

  async function loadDocuments() {
    const { status, body } = await call(root.dataset.documentsApi + "?limit=200");
    if (status !== 200) {
      say("Could not list the documents: " + problem(body, status), true);
      return;
    }
    const rows = body.results.map(documentRow);
    if (!rows.length) rows.push(element("tr", { class: "empty" }, [element("td", { colspan: "7", class: "hint", text: "No documents yet." })]));
    if (body.count > body.results.length) {
      const more = body.count - body.results.length;
      rows.push(element("tr", { class: "empty" }, [element("td", { colspan: "7", class: "hint", text: "…and " + more + " older ones (GET /api/documents lists them all)." })]));
    }
    list.replaceChildren(...rows);
    list.dataset.count = String(body.results.length);
  }

  async function deleteDocument(item, button) {
    if (!window.confirm("Delete " + item.title + " (" + item.id + ") with its " + item.chunks + " chunks and their edges?")) return;
    button.disabled = true;
    const { status, body } = await call(root.dataset.documentsApi + "/" + encodeURIComponent(item.id), { method: "DELETE" });
    if (status === 204) say("Deleted " + item.title + " (" + item.id + ").");
    else say("Could not delete " + item.id + ": " + problem(body, status), true);
    await loadDocuments();
    await loadGraph();
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = document.getElementById("document-file").files[0];
    const title = document.getElementById("document-title").value.trim();
    const project = document.getElementById("document-project").value;
    const text = document.getElementById("document-text").value;
    let options;
    if (file) {
      const data = new FormData();
      data.append("project", project);
      data.append("file", file);
      if (title) data.append("title", title);
      options = { method: "POST", body: data };
    } else if (text.trim()) {
      const mediaType = document.getElementById("document-type").value;
      options = {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ project, title, content: text, mediaType }),
      };
    } else {
      say("Choose a file or paste some text.", true);
      return;
    }
    const button = document.getElementById("document-upload");
    button.disabled = true;
    say("Uploading…");
    try {
      const { status, body } = await call(root.dataset.documentsApi, options);
      if (status === 201) {
        say("Uploaded " + body.title + " (" + body.id + "): " + body.chunks + " chunks.");
        form.reset();
        await loadDocuments();
      } else {
        say("Could not upload: " + problem(body, status), true);
      }
    } catch (error) {
      say("Could not upload: " + error.message, true);
    }
    button.disabled = false;
  });

  // --- the knowledge graph -----------------------------------------------------------------

  const map = document.getElementById("graph-map");
  const detail = document.getElementById("graph-detail");
  const count = document.getElementById("graph-count");
  const invalidToggle = document.getElementById("graph-invalid");
  const filters = [...document.querySelectorAll("#graph-filters input[name=type]")];
  let edges = [];
  let truncated = false; // more edges than MAX_EDGES: the newest are drawn
  let selectedId = null;
  const labels = new Map(); // node id -> the start of its text, read once per node
  let hits = new Set(); // the nodes of the last search's hits (memorysearch.js)
  const LABELLED = 120; // nodes whose text is read for their label; the rest show their id

  function wanted() {
    return new Set(filters.filter((box) => box.checked).map((box) => box.value));
  }

  function redraw() {
    const types = wanted();
    const shown = (edge) => types.has(edge.type);
    window.GraphView.draw(map, edges, shown, selectedId, select, { labels, hits });
    const drawn = edges.filter(shown).length;
    const nodes = window.GraphView.nodesOf(edges).length;
    count.textContent = nodes + " nodes · " + drawn + " of " + edges.length + " edges" + (truncated ? " (the newest " + MAX_EDGES + ")" : "");
    map.dataset.nodes = String(nodes);
    map.dataset.edges = String(drawn);
  }

  async function loadGraph() {
    const query = new URLSearchParams({ limit: "200" });
    if (invalidToggle.checked) query.set("includeInvalid", "true");
    let url = root.dataset.edgesApi + "?" + query;
    const found = [];
    while (url && found.length < MAX_EDGES) {
      const { status, body } = await call(url);
      if (status !== 200) {
        say("Could not read the knowledge graph: " + problem(body, status), true);
        return;
      }
      found.push(...body.results);
      url = body.next;
    }
    edges = found.slice(0, MAX_EDGES);
    truncated = Boolean(url) || found.length > MAX_EDGES;
    if (selectedId && !window.GraphView.nodesOf(edges).includes(selectedId)) selectedId = null;
    redraw();
    if (selectedId) showNode(selectedId);
    await readLabels();
    // Set once the labels are drawn too: that redraw makes the nodes anew, and their places
    // move with their labels, so a click before it could miss the node it aimed at.
    map.dataset.loaded = "true";
  }

  // The nodes are labelled by their text: each unread node's title or snippet, a few at a
  // time, then the graph is drawn again once with them.
  async function readLabels() {
    const unread = window.GraphView.nodesOf(edges).filter((id) => !labels.has(id)).slice(0, LABELLED);
    for (let start = 0; start < unread.length; start += 8) {
      await Promise.all(
        unread.slice(start, start + 8).map(async (id) => {
          const { status, body } = await call(root.dataset.nodesApi + encodeURIComponent(id));
          if (status === 200) labels.set(id, body.title || body.snippet || body.text || id);
        }),
      );
    }
    if (unread.length) redraw();
    map.dataset.labelled = "true";
  }

  function describe(edge) {
    const by = edge.createdBy;
    const who = by.runId || by.processId || by.user || "";
    return by.kind + (who ? " " + who : "");
  }

  async function showNode(id) {
    detail.dataset.node = id;
    const query = invalidToggle.checked ? "?includeInvalid=true" : "";
    const { status, body } = await call(root.dataset.nodesApi + encodeURIComponent(id) + query);
    if (detail.dataset.node !== id) return; // another node was selected meanwhile
    if (status !== 200) {
      detail.replaceChildren(element("p", { class: "error", text: id + ": " + problem(body, status) }));
      return;
    }
    const heading = element("h3", { text: body.title ? body.title + " · " + body.id : body.id });
    const facts = element("p", { class: "hint" }, [
      (body.kind === "item" ? "memory item" : "document chunk" + (body.heading ? " (" + body.heading + ")" : "")) +
        " · " + body.scope + " " + body.scopeId + (body.validTo ? " · invalid since " + body.validTo : ""),
    ]);
    const text = element("p", { class: "graph-text", text: body.text });
    const rows = body.edges.map((edge) => {
      const other = element("a", { href: "#", class: "graph-other", "data-node": edge.other.id, text: edge.other.id });
      other.addEventListener("click", (event) => {
        event.preventDefault();
        select(edge.other.id);
      });
      const arrow = edge.direction === "out" ? edge.type + " →" : "← " + edge.type;
      return element("li", { class: "graph-edge-row edge-" + edge.type + (edge.validTo ? " invalid" : ""), "data-edge": edge.id }, [
        element("span", { class: "edge-swatch" }),
        " ",
        element("strong", { text: arrow }),
        " ",
        other,
        element("small", { text: " " + edge.confidence.toFixed(2) + " · " + describe(edge) + (edge.validTo ? " · invalid" : "") }),
        element("span", { class: "graph-snippet", text: edge.other.snippet }),
        edge.reasoning ? element("span", { class: "graph-reasoning hint", text: edge.reasoning }) : "",
      ]);
    });
    const edgeList = rows.length ? element("ul", { class: "graph-edges" }, rows) : element("p", { class: "hint", text: "No edges." });
    detail.replaceChildren(heading, facts, text, element("h4", { text: "Edges (" + rows.length + ")" }), edgeList);
  }

  function select(id) {
    selectedId = id;
    window.GraphView.markSelected(map, id);
    showNode(id);
  }

  for (const box of filters) box.addEventListener("change", redraw);
  invalidToggle.addEventListener("change", loadGraph);
  document.getElementById("graph-reload").addEventListener("click", loadGraph);

  // The search box (memorysearch.js) marks its hits on the graph and opens one.
  window.MemoryGraph = {
    call,
    select,
    showHits(ids) {
      hits = new Set(ids);
      redraw();
    },
  };

  loadDocuments();
  loadGraph();
})();
