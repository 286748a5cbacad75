"""Each page loads only what it uses (issue 35: page weight under 1 MB, no unused scripts).

Run by site_src/conf.py after Sphinx has written the site (``slim_site``):

- KaTeX (its 277 KB script, the auto-render script, the stylesheets) only on pages with math;
- Sphinx's search scripts and the 87 KB search index only on the search page: the theme adds
  them to every page for its search-as-you-type, which this site does not turn on (the search
  box on each page sends the reader to search.html);
- the theme's stylesheets without the rules for elements this site never has: a rule stays
  when each class, id and element its selector names occurs in some page of the site or in a
  script the site ships (a script may add the class later), the usual "purge" of a CSS
  framework, done with tinycss2, a CSS parser (the Kozea project's, also used by WeasyPrint);
- the few icons the theme's stylesheets draw as glyphs of Font Awesome's 112 KB web font (the
  note boxes' icon) become CSS masks of the same icon, so the font is never downloaded.
"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

PURGED_CSS = (
    "styles/pydata-sphinx-theme.css",
    "styles/sphinx-book-theme.css",
    "basic.css",
    "pygments.css",
)
PURGED_CSS_GLOB = ("mystnb.*.css",)
# Classes that scripts compose from pieces (Bootstrap's "bs-tooltip-" + placement...): kept.
KEEP_PREFIXES = ("bs-", "tooltip", "popover", "dropdown", "collaps", "show", "fade", "modal")

KATEX_TAGS = re.compile(
    r'\s*<(?:script src|link rel="stylesheet" type="text/css" href)="[^"]*_static/'
    r"(?:katex\.min\.js|auto-render\.min\.js|katex_autorenderer\.js|katex/katex\.min\.css|"
    r'katex-math\.css)[^"]*"\s*/?>(?:</script>)?'
)
SEARCH_TAGS = re.compile(
    r'\s*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|searchindex\.js)'
    r'"></script>'
)
# Data, not code: the search index and the pages' texts (every word of the course), Font
# Awesome's icon set (every icon's name).
NOT_SCRIPT_WORDS = {"searchindex.js", "mha_page_texts.js", "fontawesome.js"}
MATH = re.compile(r'class="math[ "]')
WORD = re.compile(r"[A-Za-z_][\w-]*")


def page_has_math(text: str) -> bool:
    return MATH.search(text) is not None


def slim_page(text: str, is_search_page: bool, search_as_you_type: bool = False) -> str:
    """The page without the KaTeX tags when it has no math, and without the search scripts
    unless it is the search page (or search-as-you-type is on)."""
    if not page_has_math(text):
        text = KATEX_TAGS.sub("", text)
    if not is_search_page and not search_as_you_type:
        text = SEARCH_TAGS.sub("", text)
    return text


# --- the stylesheets -------------------------------------------------------------------------


def _split_selectors(tokens) -> list[list]:
    parts, current = [], []
    for tok in tokens:
        if tok.type == "literal" and tok.value == ",":
            parts.append(current)
            current = []
        else:
            current.append(tok)
    parts.append(current)
    return parts


def _required(selector) -> set[tuple[str, str]]:
    """What a selector needs in the page: ("class", x), ("id", x), ("tag", x). Anything inside
    a function (:not(), :is(), :where(), :has()) or brackets ([data-theme=dark]) is not
    required, so such a selector is kept whenever its other parts may match."""
    need, previous = set(), None
    for tok in selector:
        if tok.type == "ident":
            if previous is not None and previous.type == "literal" and previous.value == ".":
                need.add(("class", tok.value))
            elif previous is not None and previous.type == "literal" and previous.value == ":":
                pass  # a pseudo-class or pseudo-element
            else:
                need.add(("tag", tok.value.lower()))
        elif tok.type == "hash":
            need.add(("id", tok.value))
        previous = tok
    return need


def _may_match(selector, used: set[tuple[str, str]], words: set[str]) -> bool:
    for kind, name in _required(selector):
        if (kind, name) in used or name in words:
            continue
        if kind == "class" and name.startswith(KEEP_PREFIXES):
            continue
        return False
    return True


def purge_css(css: str, used: set[tuple[str, str]], words: set[str]) -> str:
    """``css`` without the rules none of whose selectors may match (see the module docstring);
    at-rules with rules inside (@media, @supports, @layer) are purged inside, others kept."""
    import tinycss2

    out = []
    for rule in tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True):
        if rule.type == "qualified-rule":
            selectors = [s for s in _split_selectors(rule.prelude) if _may_match(s, used, words)]
            if selectors:
                prelude = ",".join(tinycss2.serialize(s).strip() for s in selectors)
                out.append(f"{prelude}{{{tinycss2.serialize(rule.content)}}}")
        elif rule.type == "at-rule":
            keyword = rule.lower_at_keyword
            if rule.content is not None and keyword in ("media", "supports", "layer", "container"):
                inner = purge_css(tinycss2.serialize(rule.content), used, words)
                if inner:
                    out.append(f"@{rule.at_keyword}{tinycss2.serialize(rule.prelude)}{{{inner}}}")
            else:
                out.append(rule.serialize())
        # parse errors ("error" nodes) are dropped, as a browser drops them
    return "".join(out)


def site_vocabulary(out: Path) -> tuple[set[tuple[str, str]], set[str]]:
    """Classes, ids and element names in the site's pages, and every word of its scripts."""
    used: set[tuple[str, str]] = set()
    words: set[str] = set()
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        for classes in re.findall(r'\bclass\s*=\s*"([^"]*)"', text):
            used |= {("class", c) for c in classes.split()}
        used |= {("id", i) for i in re.findall(r'\bid\s*=\s*"([^"]+)"', text)}
        used |= {("tag", t.lower()) for t in re.findall(r"<([A-Za-z][\w-]*)", text)}
        for script in re.findall(r"<script\b[^>]*>(.*?)</script>", text, flags=re.S):
            words |= set(WORD.findall(script))
    for script in out.rglob("*.js"):
        if script.name in NOT_SCRIPT_WORDS:
            continue
        words |= set(WORD.findall(script.read_text(encoding="utf-8", errors="replace")))
    used |= {("tag", t) for t in ("html", "body", "head")}
    return used, words


# --- icons the stylesheets draw with Font Awesome's web font -----------------------------------


def _icon_variables(css: str) -> dict[str, str]:
    """--pst-icon-* custom properties, resolved to their character ("\\f05a" -> U+F05A)."""
    raw = dict(re.findall(r"(--pst-icon-[\w-]+):\s*([^;}]+)", css))

    def resolve(value: str, depth: int = 0) -> str | None:
        value = value.strip()
        m = re.fullmatch(r"var\((--[\w-]+)\)", value)
        if m:
            return resolve(raw[m.group(1)], depth + 1) if m.group(1) in raw and depth < 5 else None
        m = re.fullmatch(r"""["'](.*)["']""", value, flags=re.S)
        if not m:
            return None
        s = m.group(1)
        s = re.sub(r"\\([0-9a-fA-F]{1,6}) ?", lambda e: chr(int(e.group(1), 16)), s)
        return s if len(s) == 1 else None

    return {name: ch for name in raw if (ch := resolve(raw[name]))}


def icon_glyph_rules(css: str, fontawesome_js: str) -> list[str]:
    """For each rule of ``css`` whose ``content`` is a Font Awesome character (directly or
    through a --pst-icon-* variable), the same selector drawing that icon as a mask instead."""
    import tinycss2

    variables = _icon_variables(css)
    paths = {
        chr(int(code, 16)): (w, h, path)
        for w, h, code, path in re.findall(
            r':\[(\d+),(\d+),\[[^\]]*\],"([0-9a-f]{4})","([^"]+)"\]', fontawesome_js
        )
    }
    rules = []
    for rule in tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True):
        if rule.type == "at-rule" and rule.content is not None:
            inner = icon_glyph_rules(tinycss2.serialize(rule.content), fontawesome_js)
            if inner:
                rules.append(
                    f"@{rule.at_keyword}{tinycss2.serialize(rule.prelude)}{{{''.join(inner)}}}"
                )
            continue
        if rule.type != "qualified-rule":
            continue
        body = tinycss2.serialize(rule.content)
        m = re.search(r"content:\s*([^;]+)", body)
        if not m:
            continue
        value = m.group(1).strip().removesuffix("!important").strip()
        var = re.fullmatch(r"var\((--pst-icon-[\w-]+)\)", value)
        if var:
            ch = variables.get(var.group(1))
        else:
            lit = re.fullmatch(r"""["']\\([0-9a-fA-F]{4})["']""", value)
            ch = chr(int(lit.group(1), 16)) if lit else None
        if ch is None or ch not in paths:
            continue
        w, h, path = paths[ch]
        svg = (
            f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {w} {h}'>"
            f"<path d='{path}'/></svg>"
        )
        uri = "data:image/svg+xml," + urllib.parse.quote(svg, safe=" =:/'.,-")
        selector = tinycss2.serialize(rule.prelude).strip()
        rules.append(
            f'{selector}{{content:"";font:inherit;display:inline-block;width:1em;height:1em;'
            f"background-color:currentColor;"
            f'-webkit-mask:url("{uri}") center/contain no-repeat;'
            f'mask:url("{uri}") center/contain no-repeat}}'
        )
    return rules


def slim_site(out: Path, fontawesome_js: str, search_as_you_type: bool = False) -> dict:
    """Slim every page and stylesheet of the built site in ``out``; returns what it did."""
    static = out / "_static"
    pages = sorted(out.rglob("*.html"))
    for page in pages:
        text = page.read_text(encoding="utf-8")
        new = slim_page(text, page.relative_to(out).as_posix() == "search.html", search_as_you_type)
        if new != text:
            page.write_text(new, encoding="utf-8")
    used, words = site_vocabulary(out)
    sheets = [static / p for p in PURGED_CSS] + [
        p for pattern in PURGED_CSS_GLOB for p in static.glob(pattern)
    ]
    sizes, icons = {}, []
    for sheet in sheets:
        if not sheet.is_file():
            continue
        before = sheet.read_text(encoding="utf-8")
        after = purge_css(before, used, words)
        icons += icon_glyph_rules(after, fontawesome_js) if fontawesome_js else []
        sheet.write_text(after, encoding="utf-8")
        sizes[sheet.name] = (len(before.encode()), len(after.encode()))
    return {"css": sizes, "icon_rules": icons}
