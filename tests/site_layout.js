// What a reader of a page of the course site cannot read, at the window's width (arguments[0]):
// returns one sentence per problem (tests/site_layout.py runs it; tests/test_book.py reads it).
//
// - the page is wider than the window (it scrolls sideways);
// - an equation, a link or a figure is cut: it reaches past the edge of
//   a box that clips it (overflow hidden), or past the window, where no scroll bar reaches it
//   (a box that scrolls is fine: scrolling shows the rest; a box's start edge is not);
// - a stray "$" beside an equation (a display equation in the middle of a paragraph);
// - a table whose column names are not shown, or whose cells are stacked instead of in columns,
//   or which is wider than the page and scrolls without a line above it that says so;
// - a word of a table broken inside itself ("COURSE_Q / UICK=1"; a path may break after "/");
// - a figure that is not a link to its full-size image.
const width = arguments[0];
const problems = [];
const article = document.querySelector("article") || document.body;

function text(element) {
  const words = (element.innerText || element.getAttribute("alt") || element.textContent || "")
    .replace(/\s+/g, " ").trim();
  return [...words].slice(0, 50).join("");  // whole characters, never half a surrogate pair
}

function name(element) {
  const classes = typeof element.className === "string" ? element.className.trim() : "";
  return element.tagName.toLowerCase() + (classes ? "." + classes.split(/\s+/).join(".") : "");
}

function shown(element) {
  const box = element.getBoundingClientRect();
  return box.width > 0 && box.height > 0 && getComputedStyle(element).visibility !== "hidden";
}

// Why `element` cannot be seen whole, or null where it can (scrolling included).
function cut(element) {
  const box = element.getBoundingClientRect();
  if (box.width === 0 && box.height === 0) return null;  // not shown at all (display: none)
  const own = getComputedStyle(element);
  if (["hidden", "clip"].includes(own.overflowX) && element.scrollWidth > element.clientWidth + 1
      && !element.matches("span.math"))  // an equation's box holds MathJax's hidden copy too
    return `shows ${element.clientWidth} of its ${element.scrollWidth} px`;
  let left = box.left, right = box.right;
  for (let outer = element.parentElement; outer && outer !== document.body;
       outer = outer.parentElement) {
    const style = getComputedStyle(outer);
    if (style.overflowX === "visible") continue;
    const edge = outer.getBoundingClientRect();
    if (left < edge.left - 1 - outer.scrollLeft)
      return `starts ${Math.round(edge.left - left)} px left of ${name(outer)}, out of reach`;
    if (["auto", "scroll"].includes(style.overflowX)) {
      left = edge.left; right = edge.right;  // scrolling shows it: what counts is the box
      continue;
    }
    if (right > edge.right + 1)
      return `is cut by ${Math.round(right - edge.right)} px at the right edge of ${name(outer)}`;
  }
  if (right > width + 1) return `runs ${Math.round(right - width)} px past the window`;
  if (left < -1) return `starts ${Math.round(-left)} px left of the window`;
  return null;
}

const page = document.documentElement.scrollWidth;
if (page > width) problems.push(`the page is ${page} px wide: it scrolls sideways`);

const seen = "article mjx-container, article a[href], .prev-next-area a[href], article img";
for (const element of document.querySelectorAll(seen)) {
  const why = cut(element);
  if (why) problems.push(`${name(element)} "${text(element)}" ${why}`);
}

// Stray dollar signs: text beside an equation that starts or ends with "$", or "$$" in text.
const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT, {
  acceptNode: node => node.parentElement.closest(
    "pre, code, script, style, mjx-container, .highlight, kbd, samp, .cell_output")
    ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
});
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  const next = node.nextSibling, previous = node.previousSibling;
  const isMath = sibling => sibling && sibling.nodeType === 1 && sibling.matches(".math");
  if (node.data.includes("$$") || (isMath(next) && /\$\s*$/.test(node.data))
      || (isMath(previous) && /^\s*\$/.test(node.data)))
    problems.push(`a stray "$" beside an equation in "${text(node.parentElement)}": a display ` +
                  "equation ($$) in the middle of a paragraph?");
}

for (const table of article.querySelectorAll("table")) {
  if (!shown(table)) continue;
  const label = text(table);
  const headers = [...table.querySelectorAll("thead th")];
  const hidden = headers.filter(th => !shown(th) || th.getBoundingClientRect().width < 4
                                      || th.getBoundingClientRect().height < 4 || cut(th));
  if (hidden.length)
    problems.push(`a table does not show its column names (${hidden.map(text).join(", ")}): ` +
                  `"${label}"`);
  // a table wider than its box scrolls in it, and the line above the box says so
  let box = table.parentElement;
  while (box && box !== article && !["auto", "scroll"].includes(getComputedStyle(box).overflowX))
    box = box.parentElement;
  if (box && box !== article && table.getBoundingClientRect().width > box.clientWidth + 1) {
    const note = box.previousElementSibling;
    if (!note || !note.matches(".course-scroll-hint") || !shown(note))
      problems.push(`a table wider than the page does not say that it scrolls: "${label}"`);
  }
  const row = table.querySelector("tbody tr");
  const cells = row ? [...row.children].filter(shown) : [];
  if (cells.length > 1 && new Set(cells.map(c => Math.round(c.getBoundingClientRect().top)))
      .size > 1)
    problems.push(`a table's cells are stacked, not in columns: "${label}"`);
  // a word broken across two lines inside itself (a break after "/", "_" or a dash is fair)
  const words = document.createTreeWalker(table, NodeFilter.SHOW_TEXT, {
    acceptNode: node => node.parentElement.closest("mjx-container, script, style")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  for (let node = words.nextNode(); node; node = words.nextNode()) {
    for (const match of node.data.matchAll(/[^\s/_\-\u2013\u2014]+[/_\-\u2013\u2014]?/g)) {
      if (match[0].length < 2) continue;
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const lines = new Set([...range.getClientRects()].filter(r => r.width > 0)
                               .map(r => Math.round(r.top)));
      if (lines.size > 1)
        problems.push(`a table breaks the word "${match[0]}" inside itself: "${label}"`);
    }
  }
}

for (const image of article.querySelectorAll("img")) {
  if (!image.getAttribute("src").includes("_images/")) continue;
  const link = image.closest("a[href]");
  if (!link || link.href !== image.src)
    problems.push(`the figure "${text(image)}" is not a link to its full-size image`);
}

return problems;
