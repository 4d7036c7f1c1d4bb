// The memory inspector page. Plain DOM, no framework, nothing fetched from elsewhere.
// Text from memories is only ever set with textContent: a memory is data, never markup.
"use strict";

const TOKEN_KEY = "memory-inspector-token";
const KINDS = ["fact", "preference", "event", "episode"];
const $ = (id) => document.getElementById(id);
let memories = [];

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "class") node.className = value;
    else node[key] = value;
  }
  for (const child of children) node.append(child);
  return node;
}

function say(text, ok = false) {
  const box = $("message");
  box.textContent = text;
  box.classList.toggle("ok", ok);
  box.hidden = !text;
}

class Refusal extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers["Authorization"] = "Bearer " + token;
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch("api/" + path, Object.assign({}, options, { headers }));
  if (!response.ok) {
    let message = response.status + " " + response.statusText;
    try { message = (await response.json()).error || message; } catch (_) { /* not JSON */ }
    throw new Refusal(response.status, message);
  }
  return response;
}

function refused(error) {
  if (error instanceof Refusal && error.status === 401) {
    $("token-form").hidden = false;
    $("token-clear").hidden = true;
    $("app").hidden = true;
    say("Sign in: " + error.message);
  } else if (error instanceof Refusal && error.status === 403 && $("app").hidden) {
    say("Refused: " + error.message);
  } else {
    say("Error: " + error.message);
  }
}

function when(iso) { return iso ? iso.replace("T", " ").slice(0, 16) + " UTC" : "—"; }

function memoryItem(rec, extra) {
  const item = el("li", { class: "memory", dataset: { id: rec.id, status: rec.status, kind: rec.kind } });
  item.append(
    el("div", { class: "content", textContent: rec.content }),
    el("div", { class: "meta" },
      el("span", { class: "badge " + rec.status, textContent: rec.status }), " ",
      el("span", { class: "subject", textContent: rec.kind + " · " + rec.subject }), " · ",
      el("span", { textContent: "said " + when(rec.source.said_at || rec.created_at) }),
      rec.source.thread_id ? el("span", { textContent: " · thread " + rec.source.thread_id }) : ""),
  );
  if (extra) item.append(extra);
  const actions = el("div", { class: "actions" });
  actions.append(el("button", { type: "button", class: "show", textContent: "Details", onclick: () => showDetail(rec.id) }));
  if (rec.status === "active" && rec.kind !== "episode") {
    // A raw turn is kept word for word: it can be forgotten or deleted, not corrected.
    actions.append(el("button", { type: "button", class: "edit", textContent: "Edit", onclick: () => startEdit(item, rec) }));
  }
  if (rec.status === "active") {
    actions.append(el("button", { type: "button", class: "forget", textContent: "Forget", onclick: () => forget(rec, false) }));
  }
  actions.append(el("button", { type: "button", class: "delete danger", textContent: "Delete for good", onclick: () => forget(rec, true) }));
  item.append(actions);
  return item;
}

function render() {
  const kind = $("kind").value, status = $("status").value;
  const shown = memories.filter((m) => (!kind || m.kind === kind) && (!status || m.status === status));
  const list = $("list");
  list.replaceChildren();
  $("counts").textContent = "(" + shown.length + " of " + memories.length + ")";
  if (!shown.length) list.append(el("p", { class: "empty", textContent: "No memories here." }));
  const kinds = KINDS.concat([...new Set(shown.map((m) => m.kind))].filter((k) => !KINDS.includes(k)));
  for (const k of kinds) {
    const group = shown.filter((m) => m.kind === k);
    if (!group.length) continue;
    const ul = el("ul", { class: "memories" });
    for (const rec of group) ul.append(memoryItem(rec));
    list.append(el("div", { class: "kind-group", dataset: { kind: k } }, el("h3", { textContent: k + " (" + group.length + ")" }), ul));
  }
}

async function load() {
  const body = await (await api("memories")).json();
  memories = body.memories;
  render();
}

async function search(event) {
  event.preventDefault();
  const q = $("query").value.trim();
  if (!q) return;
  try {
    const body = await (await api("search?q=" + encodeURIComponent(q) + "&k=8")).json();
    const ol = $("results");
    ol.replaceChildren();
    $("results-query").textContent = body.query;
    for (const hit of body.results) ol.append(memoryItem(hit.memory, el("div", { class: "reason", textContent: hit.reason })));
    if (!body.results.length) ol.append(el("li", { class: "empty", textContent: "Nothing found." }));
    $("results-section").hidden = false;
    say("");
  } catch (error) { refused(error); }
}

function startEdit(item, rec) {
  const area = el("textarea", { class: "edit-content", value: rec.content });
  const save = el("button", { type: "button", class: "save-edit", textContent: "Save correction" });
  const cancel = el("button", { type: "button", textContent: "Cancel", onclick: () => render() });
  save.onclick = async () => {
    try {
      const body = await (await api("memories/" + rec.id + "/edit", { method: "POST", body: JSON.stringify({ content: area.value }) })).json();
      const actions = body.changes.map((c) => c.action).join(", ");
      say("Corrected (" + actions + "): the old text stays in history.", true);
      await refresh();
    } catch (error) { refused(error); }
  };
  item.append(el("div", { class: "editor" }, area, save, cancel));
  area.focus();
}

async function forget(rec, hard) {
  if (hard && !window.confirm("Delete this memory for good? It cannot be undone.")) return;
  try {
    await api("memories/" + rec.id + "/forget", { method: "POST", body: JSON.stringify({ hard }) });
    say(hard ? "Deleted for good." : "Forgotten: kept in history, never recalled.", true);
    await refresh();
  } catch (error) { refused(error); }
}

async function showDetail(id) {
  try {
    const body = await (await api("memories/" + encodeURIComponent(id))).json();
    const rec = body.memory;
    $("detail-id").textContent = rec.id;
    const fields = $("detail-fields");
    fields.replaceChildren();
    const rows = [
      ["content", rec.content], ["kind", rec.kind], ["subject", rec.subject], ["status", rec.status],
      ["confidence", String(rec.confidence)], ["agent", rec.agent_id],
      ["thread", rec.source.thread_id || "—"], ["messages", (rec.source.message_ids || []).join(", ") || "—"],
      ["said", when(rec.source.said_at)], ["via", rec.source.via], ["created", when(rec.created_at)],
      ["updated", when(rec.updated_at)], ["expires", when(rec.expires_at)],
      ["superseded by", rec.superseded_by || "—"],
    ];
    for (const [name, value] of rows) fields.append(el("dt", { textContent: name }), el("dd", { dataset: { field: name }, textContent: value }));
    const history = $("detail-history");
    history.replaceChildren();
    for (const h of rec.history) history.append(el("li", { textContent: when(h.at) + " " + h.action + ": " + h.content + " (" + h.status + ")" }));
    if (!rec.history.length) history.append(el("li", { textContent: "no changes yet" }));
    const chain = $("detail-chain");
    chain.replaceChildren();
    for (const prev of body.supersedes) chain.append(el("li", { textContent: prev.content + " (" + prev.status + ", " + when(prev.updated_at) + ")" }));
    if (!body.supersedes.length) chain.append(el("li", { textContent: "nothing" }));
    $("detail").hidden = false;
  } catch (error) { refused(error); }
}

async function exportAll() {
  try {
    const response = await api("export");
    const match = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
    const link = el("a", { href: URL.createObjectURL(await response.blob()), download: match ? match[1] : "memories.jsonl" });
    document.body.append(link);
    link.click();
    link.remove();
    say("Exported.", true);
  } catch (error) { refused(error); }
}

async function refresh() {
  await load();
  if (!$("results-section").hidden && $("query").value.trim()) await search(new Event("submit"));
}

async function start() {
  try {
    const me = await (await api("me")).json();
    $("whoami").textContent = "memories of " + me.user + (me.read_only ? " (read-only)" : "");
    $("app").hidden = false;
    $("token-form").hidden = true;
    $("token-clear").hidden = !sessionStorage.getItem(TOKEN_KEY);
    say("");
    await load();
  } catch (error) { refused(error); }
}

document.addEventListener("DOMContentLoaded", () => {
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token").value = "";
    start();
  });
  $("token-clear").onclick = () => { sessionStorage.removeItem(TOKEN_KEY); location.reload(); };
  $("kind").onchange = render;
  $("status").onchange = render;
  $("search-form").addEventListener("submit", search);
  $("clear-search").onclick = () => { $("query").value = ""; $("results-section").hidden = true; };
  $("export").onclick = exportAll;
  $("detail-close").onclick = () => { $("detail").hidden = true; };
  start();
});
