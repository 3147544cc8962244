"""The files the course site adds to the theme's: its stylesheet, its script and its icon
(:mod:`course_utils.tools.book` writes them into ``_static``).

What they do, read at a laptop's width (1280 px) and a phone's (390 px):

- **Tables** keep their rows and columns at every width, headers included. Cells wrap between
  words, never inside one; a table wider than the column scrolls in its own box (the theme's
  ``.pst-scrollable-table-container``, a notebook output's ``.output``), and a line above it,
  added by the script, says that it scrolls.
- **Equations** are never cut: a display equation wider than the column scrolls in its own box,
  with a shadow at the edge that has more to show; an inline one that is wider (a worked sum on
  a phone) becomes such a box too (the theme clips it).
- **Figures** are links to their full-size image: on a phone, where a figure shows at under half
  its size, a tap opens it whole (a line under it says so).
- **Links** are never cut: the previous/next links at a page's foot wrap their titles, one per
  line on a phone; a heading's ``#`` link wraps with the heading.
- **Scroll boxes** that scroll can be reached with the keyboard (``tabindex="0"``), as the theme
  does for code and tables.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["COURSE_CSS", "COURSE_JS", "FAVICON", "FAVICON_SVG", "write_assets"]

#: The site's icon (an SVG, in ``_static``): four attention weights as bars.
FAVICON = "favicon.svg"

FAVICON_SVG = """\
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
  <rect width="32" height="32" rx="6" fill="#0a7d91"/>
  <rect x="5" y="23" width="4.5" height="3" fill="#fff"/>
  <rect x="11" y="8" width="4.5" height="18" fill="#fff"/>
  <rect x="17" y="18" width="4.5" height="8" fill="#fff"/>
  <rect x="23" y="24" width="4.5" height="2" fill="#fff"/>
</svg>
"""

COURSE_CSS = """\
/* Written by course_utils.tools.book_assets: the course site's layout (see that module). */
/* Tables: cells wrap between words, never inside one; a wider table scrolls in its box. */
.bd-article table { width: 100%; table-layout: auto; }
.bd-article table td, .bd-article table th {
  white-space: normal; overflow-wrap: normal; padding: .4rem .5rem;
}
.bd-article table { font-size: .9em; }
.bd-article .cell_output .output.text_html { overflow-x: auto; max-width: 100%; }
.bd-article .course-scroll-hint {
  margin: 0 0 .3em; font-size: .85em; color: var(--pst-color-text-muted);
}
/* Inline code breaks anywhere rather than widening the page (in a table: between words). */
.bd-article :not(pre) > code, .bd-article :not(pre) > code span.pre {
  white-space: normal; overflow-wrap: anywhere;
}
.bd-article table :not(pre) > code, .bd-article table :not(pre) > code span.pre {
  overflow-wrap: normal;
}
.bd-article p, .bd-article li, .bd-article h1, .bd-article h2, .bd-article h3,
.bd-article h4 { overflow-wrap: break-word; }
/* Something wider than the column (an equation, a long output) scrolls in its own box, with a
   shadow at the edge that has more to show (scroll shadows: local backgrounds cover them at
   the ends). */
.bd-article div.math, .bd-article .cell_output pre, .bd-article .output pre,
.bd-article span.math.course-scrolls {
  --cover: var(--pst-color-background);
  --shade: rgba(0, 0, 0, .3);
  overflow-x: auto; max-width: 100%;
  background:
    linear-gradient(to right, var(--cover), var(--cover)) left / 2em 100% no-repeat local,
    linear-gradient(to left, var(--cover), var(--cover)) right / 2em 100% no-repeat local,
    linear-gradient(to right, var(--shade), transparent) left / 1em 100% no-repeat scroll,
    linear-gradient(to left, var(--shade), transparent) right / 1em 100% no-repeat scroll;
}
.bd-article .cell_output pre { --cover: var(--pst-color-surface); }
html[data-theme="dark"] .bd-article div.math,
html[data-theme="dark"] .bd-article span.math.course-scrolls { --shade: rgba(255, 255, 255, .35); }
/* the theme lays the equation out in a flex row (reversed, its number first): a wide one
   overflowed to the left, out of reach of the scroll bar: a plain row, the number last */
.bd-article div.math { flex-direction: row; justify-content: safe center; }
.bd-article div.math > .eqno { order: 1; }
.bd-article div.math mjx-container[display="true"] {
  overflow: visible !important; min-width: min-content;
}
/* an inline equation wider than the column (course.js marks it) scrolls instead of being cut */
.bd-article span.math.course-scrolls { overflow-y: hidden; vertical-align: bottom; }
/* Figures link to their full-size image; on a phone a line under each says so. */
.bd-article a.course-figure { display: inline-block; max-width: 100%; cursor: zoom-in; }
.bd-article a.course-figure img { display: block; }
.bd-article .course-figure-hint { display: none; }
/* The previous/next links wrap their titles instead of cutting them. */
.prev-next-area a .prev-next-info { min-width: 0; }
.prev-next-area a p.prev-next-title { overflow-wrap: anywhere; }
@media (max-width: 600px) {
  .bd-article .course-figure-hint { display: block; font-size: .85em; padding: .2em 0; }
  .prev-next-area a { max-width: 100%; }
}
"""

COURSE_JS = """\
// Written by course_utils.tools.book_assets: marks the boxes that scroll sideways (see that
// module). Runs once the page and its equations are laid out, and again when the window
// changes size; then sets <html data-course-layout="done"> (the browser tests wait for it).
(() => {
  "use strict";
  const BOXES = [".bd-article div.math", ".bd-article span.math",
                 ".bd-article .pst-scrollable-table-container",
                 ".bd-article .cell_output .output.text_html"].join(", ");
  const HINT = "course-scroll-hint";

  // An inline equation is as wide as its box allows (the box clips it); a box that scrolls
  // is wider inside than out. (An equation's box always holds a little more than it shows:
  // MathJax's hidden copy for screen readers.)
  function isWide(box) {
    if (box.matches("span.math")) {
      const math = box.querySelector("mjx-container");
      return Boolean(math) && math.getBoundingClientRect().width > box.clientWidth + 1;
    }
    return box.scrollWidth > box.clientWidth + 1;
  }

  function hint(box, wide) {
    const before = box.previousElementSibling;
    const shown = before !== null && before.classList.contains(HINT);
    if (wide && !shown) {
      const note = document.createElement("p");
      note.className = HINT;
      note.textContent = "Scroll the table sideways for its other columns \\u2192";
      box.before(note);
    } else if (!wide && shown) {
      before.remove();
    }
  }

  function mark() {
    // measure every box first, then mark them: one layout, not one per box
    const measured = [...document.querySelectorAll(BOXES)].map(box => [box, isWide(box)]);
    for (const [box, wide] of measured) {
      box.classList.toggle("course-scrolls", wide);
      if (wide) {
        box.tabIndex = 0;  // reachable by keyboard, as the theme does for code and tables
      } else if (box.matches(".math")) {
        box.removeAttribute("tabindex");
      }
      if (box.querySelector("table")) {
        hint(box, wide);
      }
    }
    document.documentElement.dataset.courseLayout = "done";
  }

  let timer = null;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(mark, 200);
  });
  function start() {
    const typeset = window.MathJax && MathJax.startup && MathJax.startup.promise;
    (typeset || Promise.resolve()).then(mark, mark);
  }
  if (document.readyState === "complete") {
    start();
  } else {
    window.addEventListener("load", start);
  }
})();
"""


def write_assets(static: Path) -> None:
    """Write the stylesheet, the script and the icon into ``static`` (a site's ``_static``)."""
    static.mkdir(parents=True, exist_ok=True)
    (static / "course.css").write_text(COURSE_CSS, encoding="utf-8")
    (static / "course.js").write_text(COURSE_JS, encoding="utf-8")
    (static / FAVICON).write_text(FAVICON_SVG, encoding="utf-8")
