/* Search excerpts under file:// (see site_src/search_offline.py). Sphinx's search page fetches
   each hit's page to cut an excerpt from it; browsers refuse fetch() for file:// addresses. When
   the site is opened from a file, those fetches are answered from _static/mha_page_texts.js,
   loaded on first use. Served over HTTP, this script does nothing. */
(() => {
  if (window.location.protocol !== "file:" || !window.fetch) return;
  const contentRoot = document.documentElement.dataset.content_root || "";
  const siteRoot = new URL(contentRoot, window.location.href);
  let texts = null;
  const loadTexts = () => {
    if (!texts) {
      texts = new Promise((resolve) => {
        const script = document.createElement("script");
        script.src = new URL("_static/mha_page_texts.js", siteRoot).href;
        script.onload = () => resolve(window.MHA_PAGE_TEXTS || {});
        script.onerror = () => resolve({});
        document.head.appendChild(script);
      });
    }
    return texts;
  };
  const originalFetch = window.fetch.bind(window);
  window.fetch = (input, init) => {
    const url = new URL(typeof input === "string" ? input : input.url, window.location.href);
    const page = url.pathname.startsWith(siteRoot.pathname)
      ? decodeURIComponent(url.pathname.slice(siteRoot.pathname.length))
      : null;
    if (url.protocol !== "file:" || !page || !page.endsWith(".html")) {
      return originalFetch(input, init);
    }
    return loadTexts().then((all) => {
      if (!(page in all)) return originalFetch(input, init);
      const body = `<html><body><main role="main">${all[page]}</main></body></html>`;
      return new Response(body, { headers: { "Content-Type": "text/html" } });
    });
  };
})();

/* Search excerpts show what the page says, never its chrome (issue 35): Sphinx cuts each excerpt
   from the text of the page's <main>, which also holds the header's buttons and menus ("System
   Settings Light Dark", the contents), the run box ("Run this lesson...") and the links to the
   previous and next pages. Those are taken out before Sphinx reads the text. */
(() => {
  const CHROME = [
    ".bd-header-article", ".mha-launch", ".prev-next-area", ".bd-footer-article",
    ".bd-footer-content", "#jb-print-docs-body", "nav", "summary", "button", "form",
    ".headerlink",
  ].join(", ");
  document.addEventListener("DOMContentLoaded", () => {
    if (typeof Search === "undefined" || !Search.htmlToText) return;
    const original = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(CHROME).forEach((element) => element.remove());
      // Runs of white space (the HTML's indentation) would use up the excerpt's 240 characters.
      return original(doc.documentElement.outerHTML, anchor).replace(/\s+/g, " ").trim();
    };
  });
})();
