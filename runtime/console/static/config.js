"use strict";
// Config: the effective configuration (secrets masked) as a tree, and an edited copy of the file
// checked by the bot's own validator; the persona can be reloaded. Nothing here writes the file.
const { t, el, api } = GW;

function tree(value, depth) {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    return el("dl", { class: "tree" }, ...Object.entries(value).flatMap(([k, v]) => [
      el("dt", { text: k }), el("dd", {}, tree(v, depth + 1))]));
  }
  if (Array.isArray(value)) {
    if (!value.some((v) => v && typeof v === "object")) return el("span", { text: JSON.stringify(value) });
    return el("ol", { class: "tree-list" }, ...value.map((v) => el("li", {}, tree(v, depth + 1))));
  }
  return el("span", { class: "leaf", text: JSON.stringify(value) });
}

async function load() {
  const data = await api("api/config");
  const text = el("textarea", { id: "config-text", spellcheck: "false", rows: "24" });
  text.value = data.text;
  const result = el("pre", { id: "validation", class: "validation" });
  document.getElementById("main").replaceChildren(
    el("header", { class: "page-head" }, el("h1", { text: t("config") }), el("span", { class: "muted", text: data.path })),
    el("p", { class: "muted", text: t("restart_note") }),
    el("div", { class: "row" }, el("button", { id: "reload-persona", onclick: async () => {
      result.textContent = (await api("api/config/reload", {})).answer;
    }, text: t("reload_persona") })),
    el("section", { class: "split" },
      el("div", { class: "card" }, el("h2", { text: t("effective") }), el("div", { id: "effective", class: "tree-box" }, tree(data.effective, 0))),
      el("div", { class: "card" }, el("h2", { text: t("edited") }), text,
        el("div", { class: "row" }, el("button", { id: "validate", onclick: async () => {
          const answer = await api("api/config/validate", { text: text.value });
          result.className = "validation " + (answer.ok ? "ok" : "warn");
          result.textContent = answer.ok ? t("valid") : answer.error;
        }, text: t("validate") })),
        result)));
}

(async () => {
  await GW.session();
  GW.nav("config", load);
  await load();
})();
