// Markdown in the browser, cleaned as the server cleans it (webui/conversation.py): marked
// turns a model's or a person's text into HTML (GitHub's tables and fenced code; a single
// newline stays soft, as Python `markdown` keeps it on the process page), then DOMPurify keeps
// only the server's nh3 allow-list: no script, no event handler, no style, no image, no
// javascript: link. Used for what arrives over the WebSocket (the chat's answers, the inbox
// panel's items); pages drawn by the server use its `markdown` filter. Both libraries are
// vendored in vendor/ (versions and licences in vendor/README.md).
"use strict";

window.Markdown = (function () {
  // The server's allow-list (webui.conversation.ALLOWED_TAGS: nh3's defaults less img, and the
  // attribute names and URL schemes of nh3's defaults); tests/webui/test_markdown.py keeps
  // these lists equal to it.
  const TAGS = ["a", "abbr", "acronym", "area", "article", "aside", "b", "bdi", "bdo", "blockquote", "br", "caption", "center", "cite", "code", "col", "colgroup", "data", "dd", "del", "details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "i", "ins", "kbd", "li", "map", "mark", "nav", "ol", "p", "pre", "q", "rp", "rt", "rtc", "ruby", "s", "samp", "small", "span", "strike", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "time", "tr", "tt", "u", "ul", "var", "wbr"];
  const ATTRIBUTES = ["align", "char", "charoff", "cite", "colspan", "datetime", "dir", "headers", "href", "hreflang", "rowspan", "scope", "size", "span", "start", "summary", "width"];
  const SCHEMES = ["bitcoin", "ftp", "ftps", "geo", "http", "https", "im", "irc", "ircs", "magnet", "mailto", "mms", "mx", "news", "nntp", "openpgp4fpr", "sip", "sms", "smsto", "ssh", "tel", "url", "webcal", "wtai", "xmpp"];

  const parser = new window.marked.Marked({ gfm: true, breaks: false, async: false });
  // An instance of its own, so its hook touches no other use of DOMPurify.
  const purify = window.DOMPurify(window);
  // Like nh3: every link gets rel="noopener noreferrer".
  purify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") node.setAttribute("rel", "noopener noreferrer");
  });
  const config = {
    ALLOWED_TAGS: TAGS,
    ALLOWED_ATTR: ATTRIBUTES,
    // A listed scheme, or a link without one (relative, #anchor); DOMPurify's own default
    // has the same shape with its own list of schemes.
    ALLOWED_URI_REGEXP: new RegExp("^(?:(?:" + SCHEMES.join("|") + "):|[^a-z]|[a-z+.\\-]+(?:[^a-z+.\\-:]|$))", "i"),
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  };

  // The cleaned HTML of `text` as a fragment (parsed once, by DOMPurify, never as a string).
  function fragment(text) {
    return purify.sanitize(parser.parse(text || ""), config);
  }

  // `node` shows `text` as Markdown (its class `markdown` styles it, webui.css).
  function into(node, text) {
    node.replaceChildren(fragment(text));
    node.classList.add("markdown");
    return node;
  }

  return { fragment, into };
})();
