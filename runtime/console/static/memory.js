"use strict";
// Memory: per chat the rolling summary, the memories with who said it and the message it came from,
// sessions and bound topic threads; delete a memory or forget everything about a user.
const { t, el, api, when } = GW;
let chat = GW.params.get("chat") || "";

async function act(path, body) {
  const data = await api(path, { chat, ...body });
  await load();
  document.getElementById("answer").textContent = data.error || t("deleted_n", { n: data.deleted });
}

function summary(doc) {
  if (!doc) return el("p", { class: "muted", text: t("empty") });
  return el("pre", { class: "summary mono", text: JSON.stringify(doc.summary || doc, null, 2) });
}

async function load() {
  const data = await api("api/memory?chat=" + encodeURIComponent(chat));
  document.getElementById("main").replaceChildren(
    el("header", { class: "page-head" }, el("h1", { text: `${t("memory")} · ${chat}` })),
    el("p", { id: "answer", class: "answer", role: "status" }),
    el("section", { class: "split" },
      el("div", { class: "card" }, el("h2", { text: t("summary") }), summary(data.summary)),
      el("div", { class: "card" }, el("h2", { text: t("topics") }),
        data.topics.length ? el("ul", {}, ...data.topics.map((x) => el("li", {}, el("strong", { text: x.title }), " ",
          el("span", { class: "muted", text: x.handoff || "" })))) : el("p", { class: "muted", text: t("empty") }),
        el("h2", { text: t("sessions") }),
        data.sessions.length ? el("ul", {}, ...data.sessions.map((s) => el("li", { class: "mono", text: `${s.id} · ${s.state} · ${when(s.started_at)}` })))
          : el("p", { class: "muted", text: t("empty") }))),
    el("section", { class: "card wide" }, el("h2", { text: t("memories") }),
      data.memories.length ? el("table", { id: "memories" },
        el("thead", {}, el("tr", {}, ...["content", "speaker", "source_message", "scope", ""].map((h) => el("th", { text: h ? t(h) : "" })))),
        el("tbody", {}, ...data.memories.map((m) => el("tr", { "data-memory-id": m.id },
          el("td", { text: m.content }),
          el("td", { text: m.speaker || "—" }),
          el("td", { class: "muted", text: m.source_text || m.source_message_id || "—" }),
          el("td", { class: "mono", text: m.scope }),
          el("td", {},
            el("button", { class: "ghost", text: t("delete"), onclick: () => act("api/memory/delete", { id: m.id }) }),
            m.speaker_id ? el("button", { class: "ghost", text: t("forget_user"), onclick: () => act("api/memory/forget", { user: m.speaker_id }) }) : "")))))
        : el("p", { class: "muted", text: t("empty") })));
}

async function pick() {
  const data = await api("api/groups");
  document.getElementById("main").replaceChildren(
    el("header", { class: "page-head" }, el("h1", { text: t("memory") })),
    el("ul", { class: "group-list card" }, ...data.groups.map((g) =>
      el("li", {}, el("a", { href: GW.withAccount("memory.html?chat=" + encodeURIComponent(g.chat_id)), text: g.chat_id })))));
}

(async () => {
  await GW.session();
  GW.nav("memory", () => (chat ? load() : pick()));
  await (chat ? load() : pick());
})();
