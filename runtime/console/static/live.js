"use strict";
// The live group view: one group's messages as they arrive (server-sent events), each with its thread
// colour, attention score, decision, reasons and activation state; the bot's replies (or, in shadow
// mode, would-be replies); the budget and pending activations. Chat text is set with textContent only.
const { t, el, api, when, hue } = GW;
const MAX_SHOWN = 300;
let chat = GW.params.get("chat") || "";
let source = null;
let shadow = false;
const rows = new Map(); // message id -> its row

function reasonsOf(m) {
  return GW.lang === "zh" ? m.reasons_zh : m.reasons;
}

function stateText(m) {
  const state = GW.lang === "zh" ? m.state_zh : m.state;
  const skip = GW.lang === "zh" ? m.skip_reason_zh : m.skip_reason;
  return skip ? `${state}（${skip}）` : state;
}

function messageRow(m) {
  const colour = `hsl(${hue(m.thread_id)} 65% 45%)`;
  const row = el("li", { class: "msg decision-" + m.decision, "data-message-id": m.message_id },
    el("span", { class: "thread", title: t("thread") + " " + m.thread_id }),
    el("div", { class: "body" },
      el("div", { class: "meta" },
        el("span", { class: "who", text: m.sender_name || m.sender_id }),
        el("span", { class: "time", text: when(m.time) }),
        el("span", { class: "thread-id", text: m.thread_id })),
      el("div", { class: "text", text: m.text }),
      el("div", { class: "why" },
        el("span", { class: "score", text: `${t("score")} ${m.score.toFixed(2)}` }),
        el("span", { class: "decision", text: GW.lang === "zh" ? m.decision_zh : m.decision }),
        el("span", { class: "action", text: GW.lang === "zh" ? m.action_zh : m.action }),
        el("span", { class: "state", text: stateText(m) })),
      el("div", { class: "reasons", text: (reasonsOf(m) || []).join(" · ") || "—" })));
  row.querySelector(".thread").style.background = colour;
  row.dataset.item = JSON.stringify(m);
  return row;
}

function replyRow(r) {
  return el("li", { class: "msg reply" + (r.shadow ? " shadow" : "") },
    el("span", { class: "thread" }),
    el("div", { class: "body" },
      el("div", { class: "meta" }, el("span", { class: "who", text: r.shadow ? t("would_reply") : t("reply") }),
        el("span", { class: "time", text: when(r.time) })),
      el("div", { class: "text", text: r.text })));
}

function list() {
  return document.getElementById("messages");
}

function add(node) {
  const ul = list();
  const placeholder = ul.querySelector(".placeholder");
  if (placeholder) placeholder.remove();
  ul.prepend(node);
  while (ul.children.length > MAX_SHOWN) {
    const gone = ul.lastElementChild;
    rows.delete(gone.dataset.messageId);
    gone.remove();
  }
}

function addMessage(m) {
  const row = messageRow(m);
  const old = rows.get(m.message_id);
  if (old) old.replaceWith(row);
  else add(row);
  rows.set(m.message_id, row);
  plot();
}

function update(u) {
  const row = rows.get(u.message_id);
  if (!row) return;
  const m = Object.assign(JSON.parse(row.dataset.item), u);
  const fresh = messageRow(m);
  row.replaceWith(fresh);
  rows.set(u.message_id, fresh);
}

// Attention over time: the shown messages' scores (newest right) against the chat's thresholds.
let thresholdsNow = null;
function plot() {
  const box = document.getElementById("plot");
  if (!box) return;
  const points = [...rows.values()].map((r) => JSON.parse(r.dataset.item)).sort((a, b) => a.time - b.time).slice(-120);
  const W = Math.max(300, box.clientWidth - 24), H = 120, pad = 8;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("class", "plot");
  const y = (v) => H - pad - Math.max(0, Math.min(1, v)) * (H - 2 * pad);
  for (const [name, v] of Object.entries(thresholdsNow || {})) {
    const line = document.createElementNS(ns, "line");
    line.setAttribute("x1", "0"); line.setAttribute("x2", String(W));
    line.setAttribute("y1", String(y(v))); line.setAttribute("y2", String(y(v)));
    line.setAttribute("class", "threshold threshold-" + name);
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", "4"); label.setAttribute("y", String(y(v) - 3));
    label.setAttribute("class", "threshold-label");
    label.textContent = `${t(name)} ${v.toFixed(2)}`;
    svg.append(line, label);
  }
  points.forEach((p, i) => {
    const left = 70;
    const x = points.length === 1 ? left : left + (i * (W - left - pad)) / (points.length - 1);
    const dot = document.createElementNS(ns, "circle");
    dot.setAttribute("cx", String(x)); dot.setAttribute("cy", String(y(p.score))); dot.setAttribute("r", "4");
    dot.setAttribute("class", "dot dot-" + p.decision);
    const title = document.createElementNS(ns, "title");
    title.textContent = `${p.score.toFixed(2)} ${p.sender_name || p.sender_id}`;
    dot.append(title);
    svg.append(dot);
  });
  box.replaceChildren(svg);
}

function side(budget, pending, thresholds) {
  if (thresholds) thresholdsNow = thresholds;
  const box = document.getElementById("side");
  const b = budget;
  box.replaceChildren(
    el("h2", { text: t("budget") }),
    el("p", { class: b.allowed ? "ok" : "warn", id: "budget-state",
      text: b.allowed ? t("allowed") : `${t("blocked")}：${GW.lang === "zh" ? b.reason_zh : b.reason}` }),
    el("p", { text: `${t("in_window")}：${b.normal_in_window}（@ ${b.forced_in_window}）` }),
    thresholds ? el("p", { id: "thresholds", text: `${t("thresholds")}：${t("high")} ${thresholds.high.toFixed(2)} · ${t("medium")} ${thresholds.medium.toFixed(2)}` }) : "",
    el("h2", { text: t("pending_acts") }),
    pending.length
      ? el("ul", { class: "pending" }, ...pending.map((p) => el("li", { text: `${p.kind} · ${when(p.not_before)} · ${GW.lang === "zh" ? p.state_zh : p.state}` })))
      : el("p", { class: "muted", text: t("empty") }),
    el("p", {}, el("a", { href: GW.withAccount("group.html?chat=" + encodeURIComponent(chat)), text: t("settings_of") + " →" })));
}

async function open(chatId) {
  chat = chatId;
  history.replaceState(null, "", "live.html?chat=" + encodeURIComponent(chat));
  if (source) source.close();
  rows.clear();
  list().replaceChildren(el("li", { class: "placeholder muted", text: t("no_messages") }));
  document.getElementById("chat-title").textContent = chat;
  const data = await api("api/live/recent?chat=" + encodeURIComponent(chat));
  shadow = data.shadow_mode;
  for (const m of data.messages) addMessage(m);
  side(data.budget, data.pending, data.thresholds);
  plot();
  source = new EventSource(GW.withAccount("api/live/stream?chat=" + encodeURIComponent(chat)));
  source.addEventListener("message", (e) => addMessage(JSON.parse(e.data)));
  source.addEventListener("reply", (e) => add(replyRow(JSON.parse(e.data))));
  source.addEventListener("update", (e) => update(JSON.parse(e.data)));
  source.addEventListener("budget", (e) => { const d = JSON.parse(e.data); side(d.budget, d.pending, null); });
  source.addEventListener("dropped", (e) => add(el("li", { class: "dropped muted", text: t("dropped", { n: JSON.parse(e.data).count }) })));
  source.addEventListener("open", () => document.body.classList.add("streaming"));
}

async function groups() {
  const data = await api("api/groups");
  const select = document.getElementById("chat-select");
  const filter = document.getElementById("chat-filter").value.trim();
  const shown = data.groups.filter((g) => !filter || g.chat_id.includes(filter)).slice(0, 500);
  select.replaceChildren(el("option", { value: "", text: t("pick_group") }),
    ...shown.map((g) => el("option", { value: g.chat_id, text: `${g.chat_id} · ${g.per_minute}/min${g.enabled ? "" : " · " + t("disabled")}` })));
  if (chat && !shown.some((g) => g.chat_id === chat)) select.append(el("option", { value: chat, text: chat }));
  select.value = chat;
}

function layout() {
  document.getElementById("main").replaceChildren(
    el("header", { class: "page-head" }, el("h1", { text: t("live") }), el("span", { class: "muted", text: t("live_hint") })),
    el("div", { class: "toolbar" },
      el("input", { id: "chat-filter", placeholder: t("filter"), oninput: () => groups() }),
      el("select", { id: "chat-select", onchange: (e) => e.target.value && open(e.target.value) }),
      el("strong", { id: "chat-title" })),
    el("div", { id: "plot", class: "card plot-box" }),
    el("div", { class: "live" }, el("ul", { id: "messages", class: "messages" }), el("aside", { id: "side", class: "card" })));
}

(async () => {
  await GW.session();
  GW.nav("live", () => { layout(); groups(); if (chat) open(chat); });
  layout();
  await groups();
  if (chat) await open(chat);
  setInterval(groups, 10000);
})();
