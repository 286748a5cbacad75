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
