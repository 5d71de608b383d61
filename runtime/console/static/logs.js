"use strict";
// Logs: the live tail of the bot's log (masked), filtered by level and chat; asks every two seconds
// for the lines after the last one it has. Every field is set as text.
const { t, el, api } = GW;
const MAX_SHOWN = 1000;
let after = 0;
let paused = false;

function line(l) {
  return el("tr", { class: "log-" + l.level },
    el("td", { class: "mono", text: (l.time || "").replace("T", " ").slice(0, 19) }),
    el("td", { text: l.level }), el("td", { class: "mono", text: l.event }),
    el("td", { class: "mono", text: l.chat_id || "" }), el("td", { class: "mono fields", text: l.fields }));
}

async function poll(reset) {
  if (paused && !reset) return;
  const body = document.getElementById("log-lines");
  if (reset) { after = 0; body.replaceChildren(); }
  const level = document.getElementById("level").value;
  const chat = document.getElementById("chat").value.trim();
  const data = await api(`api/logs?after=${after}&level=${level}` + (chat ? "&chat=" + encodeURIComponent(chat) : ""));
  for (const l of data.lines) { body.prepend(line(l)); after = Math.max(after, l.seq); }
  while (body.children.length > MAX_SHOWN) body.lastElementChild.remove();
}

function layout() {
  const level = el("select", { id: "level", onchange: () => poll(true) },
    ...["debug", "info", "warning", "error"].map((v) => el("option", { value: v, text: v })));
  level.value = "info";
  document.getElementById("main").replaceChildren(
    el("header", { class: "page-head" }, el("h1", { text: t("logs") })),
    el("div", { class: "toolbar" }, el("label", {}, t("level") + " ", level),
      el("input", { id: "chat", placeholder: t("all_chats"), oninput: () => poll(true) }),
      el("button", { id: "pause", class: "ghost", onclick: (e) => { paused = !paused; e.target.textContent = paused ? t("resume") : t("paused"); }, text: t("paused") })),
    el("div", { class: "card wide" }, el("table", { class: "logs" }, el("tbody", { id: "log-lines" }))));
}

(async () => {
  await GW.session();
  GW.nav("logs", () => { layout(); poll(true); });
  layout();
  await poll(true);
  setInterval(() => poll(false), 2000);
})();
