// The memory page's search box: GET /api/memory/search (hybrid: words and meaning) over the
// person's memory items and document chunks; each hit with the words searched for marked in
// its snippet, its hits ringed on the knowledge graph, a hit on the graph opened there.
"use strict";

(function () {
  const form = document.getElementById("memory-search-form");
  if (!form) return;
  const input = document.getElementById("memory-search-q");
  const results = document.getElementById("memory-search-results");
  const api = form.dataset.api;

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function words(query) {
    return query
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter((word) => word.length > 1);
  }

  // The snippet as text nodes, each searched word (or a word it begins) in a <mark>.
  function marked(text, terms) {
    const box = element("p", "search-snippet");
    if (!terms.length) {
      box.textContent = text;
      return box;
    }
    const escaped = terms.map((term) => term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    const pattern = new RegExp("(" + escaped.join("|") + ")", "giu");
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      box.append(document.createTextNode(text.slice(last, match.index)));
      box.append(element("mark", null, match[0]));
      last = match.index + match[0].length;
    }
    box.append(document.createTextNode(text.slice(last)));
    return box;
  }

  function nodeId(hit) {
    if (hit.itemId) return hit.itemId;
    if (hit.documentId !== undefined && hit.chunk !== undefined) return hit.documentId + ":" + hit.chunk;
    return null;
  }

  function row(hit, terms) {
    const id = nodeId(hit);
    const item = element("li", "search-hit");
    if (id) item.dataset.node = id;
    const heading = element("div", "search-hit-heading");
    heading.append(element("strong", null, hit.title || (hit.itemId ? "memory item" : "document chunk")));
    heading.append(element("small", null, " " + (id || "") + " · " + hit.scope + " · score " + hit.score.toFixed(3)));
    item.append(heading, marked(hit.snippet, terms));
    if (id) {
      const open = element("button", "link search-open", "show on the graph");
      open.type = "button";
      open.addEventListener("click", () => window.MemoryGraph.select(id));
      item.append(open);
    }
    return item;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const query = input.value.trim();
    if (!query) return;
    results.dataset.state = "searching";
    const { status, body } = await window.MemoryGraph.call(api + "?" + new URLSearchParams({ q: query, k: "10" }));
    if (status !== 200) {
      results.replaceChildren(element("p", "error", (body && body.message) || "HTTP " + status));
      results.dataset.state = "error";
      return;
    }
    const terms = words(query);
    const hits = body.results;
    const list = element("ol", "search-hits");
    list.append(...hits.map((hit) => row(hit, terms)));
    results.replaceChildren(hits.length ? list : element("p", "hint", "Nothing found for “" + query + "”."));
    window.MemoryGraph.showHits(hits.map(nodeId).filter(Boolean));
    results.dataset.state = "done";
    results.dataset.hits = String(hits.length);
  });
})();
