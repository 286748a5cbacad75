/* Keyboard access to boxes that scroll sideways (wide tables, long formulas on a phone, the
   explorers' pictures): a box that scrolls must be reachable with the Tab key, or a keyboard
   user cannot scroll it (WCAG 2.1.1; axe-core rule scrollable-region-focusable). CSS makes these
   boxes scroll only when their content is wider than the page, so this marks exactly those, once
   the page (and its math) has been laid out, and again when the window changes size. */
(() => {
  const SCROLLERS = [
    "div.cell_output",
    "div.cell_output .output",
    "div.cell_output .text_html",
    ".bd-article div.math",
    ".bd-article .katex-display",
    ".bd-article .table-wrapper",
    ".bd-article table.table",
    ".bd-article div.highlight pre",
    "div.cell_output pre",
  ].join(",");
  const mark = () => {
    for (const box of document.querySelectorAll(SCROLLERS)) {
      const style = getComputedStyle(box);
      const scrolls =
        ["auto", "scroll"].includes(style.overflowX) && box.scrollWidth > box.clientWidth + 1;
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        box.dataset.mhaScrolls = "";
      } else if (!scrolls && "mhaScrolls" in box.dataset) {
        box.removeAttribute("tabindex");
        delete box.dataset.mhaScrolls;
      }
    }
    document.documentElement.dataset.mhaScrollables = "marked";
  };
  let timer = null;
  const later = () => {
    clearTimeout(timer);
    timer = setTimeout(mark, 150);
  };
  window.addEventListener("load", () => {
    mark();
    later(); // KaTeX renders on load too
  });
  window.addEventListener("resize", later);
})();
