"use strict";
// The overview: cards of figures (the runtime's statistics; with several accounts, the accounts and
// where values come from), tokens per feature and per group today.
const { t, el, svg, api } = GW;

// Tokens per day as bars (the ledger's last two weeks).
function days(rows) {
  if (!rows.length) return el("p", { class: "muted", text: t("none") });
  const W = 860, H = 150, base = 120, top = 14, most = Math.max(1, ...rows.map((r) => r.tokens));
  const step = (W - 20) / rows.length, bar = Math.min(46, step * 0.7);
  return svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "plot days", id: "per-day" },
    svg("line", { x1: 10, x2: W - 10, y1: base, y2: base, class: "axis" }),
    ...rows.flatMap((r, i) => {
      const h = ((base - top) * r.tokens) / most, x = 10 + i * step + (step - bar) / 2;
      return [svg("rect", { x, y: base - h, width: bar, height: h, class: "bar" }, svg("title", { text: `${r.day}: ${r.tokens} tokens, ${r.calls} calls` })),
        svg("text", { x: x + bar / 2, y: base + 14, class: "threshold-label mid", text: r.day.slice(5) }),
        svg("text", { x: x + bar / 2, y: base - h - 3, class: "threshold-label mid", text: String(r.tokens) })];
    }));
}
let last = null;

function value(v) {
  if (Array.isArray(v)) return v.length ? v.map((x) => (x && typeof x === "object" ? value(x) : String(x))).join("，") : t("none");
  if (v && typeof v === "object") {
    // A value with its origin (where it comes from), or an MCP server's figures (state first).
    if ("origin" in v) return `${JSON.stringify(v.value)}（${t("origin_" + v.origin)}）`;
    return Object.entries(v).map(([k, x]) => (k === "state" ? t(String(x)) : `${t(k)} ${String(x)}`)).join("，");
  }
  if (typeof v === "boolean") return v ? "✓" : "✗";
  if (v === null || v === undefined) return "—";
  return t(String(v));
}

function table(headers, rows) {
  return el("table", {},
    el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", { text: t(h) })))),
    el("tbody", {}, ...rows.map((r) => el("tr", {}, ...r.map((c) => el("td", { text: c }))))));
}

function render() {
  const data = last;
  if (!data) return;
  const head = el("header", { class: "page-head" },
    el("h1", { text: data.persona + " · " + t("overview") }),
    el("span", { class: data.shadow_mode ? "badge warn" : "badge ok", text: data.shadow_mode ? t("shadow") : t("speaking") }));
  const cards = el("section", { class: "cards" }, ...data.cards.map((card) =>
    el("div", { class: "card", id: "card-" + card.title },
      el("h2", { text: t(card.title) }),
      el("dl", {}, ...card.rows.flatMap(([label, v]) => [el("dt", { text: t(label) }), el("dd", { text: value(v) })])))));
  const money = (c) => (c === null || c === undefined ? "—" : c.toFixed(4));
  const features = el("div", { class: "card wide" }, el("h2", { text: t("per_feature") }),
    table(["role", "calls", "tokens", "cost"], data.per_feature.map((f) => [f.role, String(f.calls), String(f.tokens), money(f.cost)])));
  const groups = el("div", { class: "card wide" }, el("h2", { text: t("per_group") }),
    data.per_group.length
      ? table(["chat", "calls", "tokens", "cost"], data.per_group.map((g) => [g.chat_id, String(g.calls), String(g.tokens), money(g.cost)]))
      : el("p", { class: "muted", text: t("none") }));
  const perDay = el("div", { class: "card wide" }, el("h2", { text: t("per_day") }), days(data.per_day));
  document.getElementById("main").replaceChildren(head, cards, el("section", { class: "cards" }, perDay, features, groups));
}

async function refresh() {
  try {
    last = await api("api/overview");
    render();
  } catch (exc) {
    console.warn(exc);
  }
}

(async () => {
  await GW.session();
  GW.nav("overview", render);
  await refresh();
  setInterval(refresh, 5000);
})();
