// The a2c run viewer: draws the report, the item list and the item pages from the data inlined in this file.
// Task-neutral: everything it shows is sections of blocks (table, heatmap, text, image) and a list whose
// columns say how they filter and sort. Item pages are inflated lazily, one compressed chunk at a time.
"use strict";

const DATA = JSON.parse(document.getElementById("a2c-data").textContent);
const PAGE_ROWS = 100; // list rows drawn at a time
const chunks = new Map(); // "run/chunk" -> Promise of {id: sections}
const lists = DATA.runs.map((run) => ({
  search: "", flags: {}, choices: {}, sort: null, desc: false, offset: 0, group: (run.groups || [])[0] || null,
}));

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value);
  }
  return put(node, children);
}

function put(node, ...children) {
  // append children, arrays flattened and empty ones (null, undefined, false) skipped
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  for (const child of children.flat()) node.append(child instanceof Node ? child : String(child));
  return node;
}

function route() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.has("compare") || (!params.has("r") && DATA.comparison)) return { compare: true };
  const run = Math.min(Number(params.get("r") || 0), DATA.runs.length - 1);
  if (params.has("id")) return { run, page: "item", id: params.get("id") };
  return { run, page: params.get("p") === "list" ? "list" : "overview" };
}

function link(params) {
  return "#" + new URLSearchParams(params).toString();
}

// -- blocks -------------------------------------------------------------------------------------------------

function inline(text) {
  // the report's inline marks: `code` and **bold**; everything else is text
  const out = [];
  const pattern = /`([^`]+)`|\*\*([^*]+)\*\*/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    out.push(text.slice(last, match.index));
    out.push(match[1] !== undefined ? el("code", {}, match[1]) : el("b", {}, match[2]));
    last = match.index + match[0].length;
  }
  out.push(text.slice(last));
  return out;
}

function drawTable(block) {
  const head = el("tr", {}, block.header.map((h) => el("th", {}, h)));
  const body = block.rows.map((row, i) =>
    el("tr", { class: (block.marks || [])[i] ? "mark-" + block.marks[i] : "" }, row.map((c) => el("td", {}, c))));
  return el("div", { class: "scroll" }, block.title ? el("h4", {}, block.title) : null,
    el("table", { class: "data" }, el("thead", {}, head), el("tbody", {}, body)));
}

function colour(value, low, high) {
  const t = Math.max(0, Math.min(1, (value - low) / ((high - low) || 1)));
  const shade = Math.round(255 - 170 * t);
  return `rgb(${shade},${Math.round(255 - 110 * t)},255)`;
}

function drawHeatmap(block) {
  const n = block.labels.length;
  const cell = 34, left = 14, top = 22;
  const short = block.labels.map((l) => l.split(":")[0]);
  const box = svg("svg", { width: left + n * cell + 2, height: top + n * cell + 2, class: "heatmap",
    role: "img", "aria-label": block.title });
  short.forEach((s, j) => box.append(svg("text", { x: left + j * cell + cell / 2, y: top - 6, "text-anchor": "middle",
    class: "axis" }, s)));
  block.values.forEach((row, i) => row.forEach((v, j) => {
    const x = left + j * cell, y = top + i * cell;
    box.append(svg("rect", { x, y, width: cell - 1, height: cell - 1, fill: colour(v, block.low, block.high) },
      svg("title", {}, `${block.labels[i]} × ${block.labels[j]}: ${v.toFixed(3)}`)));
    box.append(svg("text", { x: x + cell / 2, y: y + cell / 2 + 4, "text-anchor": "middle", class: "value" },
      v.toFixed(2)));
  }));
  const legend = el("ol", { class: "labels" }, block.labels.map((label, i) => el("li", {},
    block.clusters.length ? el("span", { class: "cluster", title: "cluster" }, "cluster " + (block.clusters[i] + 1)) : null,
    " ", label)));
  const count = block.clusters.length ? new Set(block.clusters).size : 0;
  return el("figure", { class: "heatmap-block" }, el("figcaption", {}, block.title,
    count ? el("span", { class: "muted" }, ` · ${count} cluster${count === 1 ? "" : "s"}`) : null),
  n ? box : el("p", { class: "muted" }, "no answers"), legend);
}

function drawBlock(block) {
  switch (block.kind) {
    case "table": return drawTable(block);
    case "heatmap": return drawHeatmap(block);
    case "image": return el("img", { src: block.src, alt: block.alt, class: "plot" });
    case "text": return block.pre ? el("pre", {}, block.text) : el("p", {}, block.markup ? inline(block.text) : block.text);
    default: throw new Error("unknown block kind " + block.kind);
  }
}

function drawSections(sections) {
  return sections.map((s) => {
    const heading = el("h" + Math.min(6, s.level), {}, s.title);
    const blocks = s.blocks.map(drawBlock);
    const maps = blocks.filter((b) => b.classList.contains("heatmap-block"));
    if (s.folded) return el("details", { class: "section" }, el("summary", {}, s.title), blocks);
    return el("section", { class: maps.length ? "section maps" : "section" }, heading,
      maps.length ? [blocks.filter((b) => !maps.includes(b)), el("div", { class: "grid" }, maps)] : blocks);
  });
}

// -- the item list ------------------------------------------------------------------------------------------

function shown(run, state) {
  return run.columns.filter((c) => !c.group || c.group === state.group);
}

function matches(run, state, row) {
  if (state.search) {
    const needle = state.search.toLowerCase();
    const text = run.columns.filter((c) => c.kind === "text" || c.kind === "choice")
      .map((c) => String(row[c.key] ?? "")).join(" ").toLowerCase();
    if (!text.includes(needle)) return false;
  }
  for (const [key, want] of Object.entries(state.flags)) {
    if (want !== "any" && Boolean(row[key]) !== (want === "yes")) return false;
  }
  for (const [key, want] of Object.entries(state.choices)) {
    if (want !== "" && String(row[key] ?? "") !== want) return false;
  }
  return true;
}

function filtered(runIndex) {
  const run = DATA.runs[runIndex], state = lists[runIndex];
  const rows = run.rows.filter((row) => matches(run, state, row));
  if (state.sort) {
    const key = state.sort, sign = state.desc ? -1 : 1;
    rows.sort((a, b) => {
      const x = a[key], y = b[key];
      if (x === null || x === undefined) return (y === null || y === undefined) ? 0 : 1; // missing last
      if (y === null || y === undefined) return -1;
      return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * sign;
    });
  }
  return rows;
}

const counts = new Map(); // column object -> whether every value of it is a whole number

function cellText(run, column, value) {
  if (value === null || value === undefined) return column.kind === "number" ? "n/a" : "";
  if (column.kind === "flag") return value ? "yes" : "";
  if (typeof value !== "number") return String(value);
  if (!counts.has(column)) {
    counts.set(column, run.rows.every((r) => r[column.key] === null || Number.isInteger(r[column.key])));
  }
  return counts.get(column) ? String(value) : value.toFixed(3);
}

function drawList(runIndex, target) {
  const run = DATA.runs[runIndex], state = lists[runIndex];
  const rows = filtered(runIndex);
  state.offset = Math.min(state.offset, Math.max(0, rows.length - 1 - ((rows.length - 1) % PAGE_ROWS)));
  const columns = shown(run, state);
  const redraw = () => drawList(runIndex, target);
  const controls = el("div", { class: "controls" },
    el("input", { type: "search", placeholder: `search ${run.noun}s`, value: state.search, id: "a2c-search",
      oninput: (e) => {
        state.search = e.target.value; state.offset = 0; redraw();
        const box = document.getElementById("a2c-search");
        box.focus();
        box.setSelectionRange(box.value.length, box.value.length);
      } }),
    run.groups && run.groups.length ? el("label", {}, "columns of ", el("select", {
      "data-group": "1", onchange: (e) => { state.group = e.target.value; redraw(); } },
    run.groups.map((g) => el("option", g === state.group ? { value: g, selected: "" } : { value: g }, g)))) : null,
    run.columns.filter((c) => c.kind === "flag").map((c) => el("label", {}, c.label + " ",
      el("select", { "data-filter": c.key, onchange: (e) => { state.flags[c.key] = e.target.value; state.offset = 0; redraw(); } },
        ["any", "yes", "no"].map((v) => el("option", v === (state.flags[c.key] || "any") ? { value: v, selected: "" } : { value: v }, v))))),
    run.columns.filter((c) => c.kind === "choice").map((c) => {
      const values = [...new Set(run.rows.map((r) => String(r[c.key] ?? "")))].sort();
      return el("label", {}, c.label + " ", el("select", { "data-choice": c.key,
        onchange: (e) => { state.choices[c.key] = e.target.value; state.offset = 0; redraw(); } },
      el("option", { value: "" }, "any"),
      values.map((v) => el("option", v === state.choices[c.key] ? { value: v, selected: "" } : { value: v }, v))));
    }));
  const head = el("tr", {}, columns.map((c) => el("th", {
    class: "sortable" + (state.sort === c.key ? (state.desc ? " desc" : " asc") : ""), "data-key": c.key, title: "sort",
    onclick: () => { state.desc = state.sort === c.key ? !state.desc : c.kind === "number"; state.sort = c.key; redraw(); },
  }, c.label)));
  const page = rows.slice(state.offset, state.offset + PAGE_ROWS);
  const body = page.map((row) => el("tr", { "data-id": row.id, class: "row",
    onclick: () => { location.hash = link({ r: runIndex, id: row.id }); } },
  columns.map((c) => el("td", { class: "col-" + c.kind }, cellText(run, c, row[c.key])))));
  const pager = rows.length > PAGE_ROWS ? el("div", { class: "pager" },
    el("button", { disabled: state.offset === 0 ? "" : null, onclick: () => { state.offset -= PAGE_ROWS; redraw(); } }, "previous"),
    ` ${state.offset + 1}–${Math.min(rows.length, state.offset + PAGE_ROWS)} `,
    el("button", { disabled: state.offset + PAGE_ROWS >= rows.length ? "" : null,
      onclick: () => { state.offset += PAGE_ROWS; redraw(); } }, "next")) : null;
  target.replaceChildren();
  put(target, controls,
    el("p", { class: "count" }, el("span", { id: "a2c-count" }, String(rows.length)), ` of ${run.rows.length} ${run.noun}s`),
    (run.notes || []).map((n) => el("p", { class: "note" }, n)),
    el("div", { class: "scroll" }, el("table", { class: "data list" }, el("thead", {}, head), el("tbody", {}, body))),
    pager);
  return target;
}

// -- item pages ---------------------------------------------------------------------------------------------

async function inflate(base64) {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  return JSON.parse(await new Response(stream).text());
}

function chunk(runIndex, k) {
  const key = `${runIndex}/${k}`;
  if (!chunks.has(key)) {
    const node = document.getElementById(`a2c-pages-${runIndex}-${k}`);
    chunks.set(key, inflate(node.textContent.trim()));
  }
  return chunks.get(key);
}

async function drawItem(runIndex, id, target) {
  const run = DATA.runs[runIndex];
  const position = run.rows.findIndex((r) => r.id === id);
  if (position < 0) {
    target.append(el("p", { class: "note" }, `no ${run.noun} ${id} in this run`));
    return;
  }
  const pages = await chunk(runIndex, Math.floor(position / run.chunk_size));
  const order = filtered(runIndex).map((r) => r.id);
  const at = order.indexOf(id);
  const step = (delta) => at >= 0 && order[at + delta] !== undefined
    ? el("a", { href: link({ r: runIndex, id: order[at + delta] }) }, delta < 0 ? "← previous" : "next →") : null;
  put(target, el("nav", { class: "steps" }, el("a", { href: link({ r: runIndex, p: "list" }) }, `all ${run.noun}s`),
    " ", step(-1), " ", step(1)), drawSections(pages[id]));
}

// -- the page -----------------------------------------------------------------------------------------------

function tabs(where) {
  const items = [];
  if (DATA.comparison) items.push(el("a", { href: link({ compare: 1 }), class: where.compare ? "on" : "" }, "comparison"));
  DATA.runs.forEach((run, r) => {
    const mine = !where.compare && where.run === r;
    items.push(el("span", { class: "run" + (mine ? " on" : "") }, el("b", {}, run.title),
      el("a", { href: link({ r }), class: mine && where.page === "overview" ? "on" : "" }, "overview"),
      el("a", { href: link({ r, p: "list" }), class: mine && where.page !== "overview" ? "on" : "" },
        `${run.noun}s (${run.rows.length})`)));
  });
  return el("nav", { class: "tabs" }, items);
}

async function render() {
  const where = route();
  const main = document.getElementById("a2c-main");
  const page = el("div", {});
  document.getElementById("a2c-tabs").replaceChildren(tabs(where));
  if (where.compare) {
    put(page, drawSections(DATA.comparison));
  } else if (where.page === "overview") {
    const run = DATA.runs[where.run];
    put(page, el("p", { class: "muted" }, run.subtitle), (run.notes || []).map((n) => el("p", { class: "note" }, n)),
      drawSections(run.overview));
  } else if (where.page === "list") {
    drawList(where.run, page);
  } else {
    await drawItem(where.run, where.id, page);
  }
  main.replaceChildren(page);
  document.body.dataset.rendered = location.hash || "#";
  if (window.a2cFirstRender === undefined) window.a2cFirstRender = performance.now();
}

function show() {
  render().catch((error) => {
    console.error(error);
    document.getElementById("a2c-main").replaceChildren(el("p", { class: "note" }, "could not draw this page: " + error));
    document.body.dataset.rendered = "error";
  });
}

window.addEventListener("hashchange", show);
show();
