"use strict";
// Group settings: enable/disable, mute/unmute, threshold overrides (with each value's origin), the
// lexicon. Every change is a call of the runtime's admin control; its answer is shown as said.
const { t, el, api } = GW;
let chat = GW.params.get("chat") || "";

function answer(text) {
  document.getElementById("answer").textContent = text || "";
}

async function act(path, body) {
  try {
    const data = await api(path, { chat, ...body });
    answer(data.answer);
  } catch (exc) {
    answer(exc.message);
  }
  await load();
}

function origin(o) {
  return el("span", { class: "origin origin-" + o, text: t("origin_" + o) });
}

function number(v) {
  const text = v.trim();
  return text === "" ? null : Number(text);
}

function render(g) {
  const gate = g.gate.open ? t("open") : `${t("quiet")}（${g.gate.reason}${g.gate.until ? " → " + GW.when(g.gate.until) : ""}）`;
  const th = g.thresholds;
  const high = el("input", { id: "high", type: "number", step: "0.01", min: "0", max: "1", value: String(th.high.value) });
  const medium = el("input", { id: "medium", type: "number", step: "0.01", min: "0", max: "1", value: String(th.medium.value) });
  const minutes = el("input", { id: "mute-minutes", type: "number", min: "1", placeholder: t("minutes") });
  const term = el("input", { id: "term", placeholder: t("term"), maxlength: "64" });
  const weight = el("input", { id: "weight", type: "number", step: "0.1", min: "0", placeholder: t("weight") });
  document.getElementById("main").replaceChildren(
    el("header", { class: "page-head" }, el("h1", { text: `${t("group")} · ${g.chat_id}` }),
      ...["live", "memory", "whatif"].map((page) =>
        el("a", { href: GW.withAccount(`${page}.html?chat=${encodeURIComponent(g.chat_id)}`), text: t(page) + " →" }))),
    el("p", { id: "answer", class: "answer", role: "status" }),
    el("section", { class: "cards" },
      el("div", { class: "card" }, el("h2", { text: t("enabled") }),
        el("p", { id: "enabled-state", class: g.enabled ? "ok" : "warn" }, g.enabled ? t("enabled") : t("disabled"), " ", origin(g.enabled_origin)),
        el("button", { id: "toggle-enabled", onclick: () => act("api/group/enabled", { on: !g.enabled }), text: g.enabled ? t("disable") : t("enable") })),
      el("div", { class: "card" }, el("h2", { text: t("gate") }),
        el("p", { id: "gate-state", text: gate }),
        el("div", { class: "row" }, minutes,
          el("button", { id: "mute", onclick: () => act("api/group/mute", { minutes: number(minutes.value) }), text: t("mute") }),
          el("button", { id: "unmute", class: "ghost", onclick: () => act("api/group/unmute", {}), text: t("unmute") }))),
      el("div", { class: "card" }, el("h2", { text: t("thresholds") }),
        el("table", {}, el("tbody", {},
          el("tr", {}, el("th", { text: t("high") }), el("td", {}, high), el("td", {}, origin(th.high.origin)), el("td", { class: "muted", text: `${t("origin_config")} ${th.high.config}` })),
          el("tr", {}, el("th", { text: t("medium") }), el("td", {}, medium), el("td", {}, origin(th.medium.origin)), el("td", { class: "muted", text: `${t("origin_config")} ${th.medium.config}` })))),
        el("div", { class: "row" },
          el("button", { id: "save-thresholds", onclick: () => act("api/group/thresholds", { high: number(high.value), medium: number(medium.value) }), text: t("save") }),
          el("button", { id: "reset-thresholds", class: "ghost", onclick: () => act("api/group/thresholds", { high: null, medium: null }), text: t("reset") }))),
      el("div", { class: "card" }, el("h2", { text: t("budget") }),
        el("table", {}, el("tbody", {}, ...Object.entries(g.budget).map(([k, v]) =>
          el("tr", {}, el("th", { text: t(k) }), el("td", { text: String(v.value) }), el("td", {}, origin(v.origin)))))))),
    el("section", { class: "card wide" }, el("h2", { text: t("lexicon") }),
      el("div", { class: "row" }, term, weight,
        el("button", { id: "lexicon-add", onclick: () => act("api/group/lexicon", { action: "add", term: term.value, weight: number(weight.value) }), text: t("add") }),
        el("button", { id: "lexicon-pin", class: "ghost", onclick: () => act("api/group/lexicon", { action: "pin", term: term.value }), text: t("pin") }),
        el("button", { id: "lexicon-suppress", class: "ghost", onclick: () => act("api/group/lexicon", { action: "suppress", term: term.value }), text: t("suppress") })),
      g.lexicon.length
        ? el("table", { id: "lexicon" },
          el("thead", {}, el("tr", {}, ...["term", "weight", "status", "source"].map((h) => el("th", { text: t(h) })))),
          el("tbody", {}, ...g.lexicon.map((x) => el("tr", {}, el("td", { text: x.text }), el("td", { text: String(x.weight) }),
            el("td", { text: x.status }), el("td", { text: x.source })))))
        : el("p", { class: "muted", text: t("empty") })));
}

async function load() {
  const keep = document.getElementById("answer") ? document.getElementById("answer").textContent : "";
  render(await api("api/group?chat=" + encodeURIComponent(chat)));
  answer(keep);
}

async function pick() {
  const data = await api("api/groups");
  document.getElementById("main").replaceChildren(
    el("header", { class: "page-head" }, el("h1", { text: t("group") })),
    el("ul", { class: "group-list card" }, ...data.groups.map((g) =>
      el("li", {}, el("a", { href: GW.withAccount("group.html?chat=" + encodeURIComponent(g.chat_id)), text: g.chat_id }),
        " ", el("span", { class: "muted", text: `${g.per_minute}/min · ${g.enabled ? t("enabled") : t("disabled")}` })))));
}

(async () => {
  await GW.session();
  GW.nav("group", () => (chat ? load() : pick()));
  await (chat ? load() : pick());
})();
