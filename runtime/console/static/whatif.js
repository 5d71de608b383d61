"use strict";
// What if: the group's last hours replayed under changed thresholds beside the current ones; counts
// and an attention plot (scores, both thresholds, would-speak marks of both runs, real sends).
const { t, el, svg, api, when } = GW;
let chat = GW.params.get("chat") || "";

function plot(data) {
  const W = Math.max(600, document.getElementById("main").clientWidth - 40), H = 280, left = 64, top = 10, bottom = 80;
  // The time axis spans what there is to show (the window's first message to now), not the empty hours.
  const times = [...data.points.map((p) => p.time), ...data.runs.flatMap((r) => r.speaks), ...data.actual.times];
  const from = times.length ? Math.min(...times) - 1 : data.since;
  const to = Math.max(data.until, ...times) + 1;
  const x = (s) => left + ((s - from) / Math.max(1, to - from)) * (W - left - 10);
  const y = (v) => top + (1 - Math.max(0, Math.min(1, v))) * (H - top - bottom);
  const [now, changed] = data.runs;
  const lanes = [[now.speaks, "speak-now", t("now_thresholds")], [changed.speaks, "speak-changed", t("changed")],
    [data.actual.times, "speak-actual", t("actual_sent")]];
  return svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "plot whatif-plot", id: "whatif-plot" },
    svg("line", { x1: left, x2: W - 10, y1: y(0), y2: y(0), class: "axis" }),
    svg("text", { x: 4, y: y(1) + 4, class: "threshold-label", text: "1.0" }),
    svg("text", { x: 4, y: y(0) + 4, class: "threshold-label", text: "0" }),
    svg("text", { x: left, y: y(0) + 14, class: "threshold-label", text: when(from) }),
    svg("text", { x: W - 60, y: y(0) + 14, class: "threshold-label", text: when(to) }),
    svg("line", { x1: left, x2: W - 10, y1: y(now.high), y2: y(now.high), class: "threshold threshold-high" }),
    svg("line", { x1: left, x2: W - 10, y1: y(changed.high), y2: y(changed.high), class: "threshold threshold-changed" }),
    svg("line", { x1: left, x2: W - 10, y1: y(changed.medium), y2: y(changed.medium), class: "threshold threshold-changed-medium" }),
    ...data.points.map((p) => svg("circle", { cx: x(p.time), cy: y(p.score), r: 3, class: "dot dot-" + p.decision },
      svg("title", { text: `${when(p.time)} ${p.score.toFixed(2)}` }))),
    ...lanes.flatMap(([times, cls, label], i) => {
      const ly = H - bottom + 30 + i * 16;
      return [svg("text", { x: 4, y: ly + 4, class: "threshold-label", text: label }),
        ...times.map((s) => svg("line", { x1: x(s), x2: x(s), y1: ly - 6, y2: ly + 6, class: "mark " + cls }))];
    }));
}

function result(data) {
  const box = document.getElementById("whatif-result");
  if (data.error) { box.replaceChildren(el("p", { class: "warn", text: data.error })); return; }
  const [now, changed] = data.runs;
  const card = (title, run) => el("div", { class: "card" }, el("h2", { text: title }),
    el("p", { class: "big", text: `${t("would_speak")} ${run.would_speak}` }),
    el("p", { class: "muted", text: `${t("high")} ${run.high.toFixed(2)} · ${t("medium")} ${run.medium.toFixed(2)}` }),
    el("p", { class: "muted", text: Object.entries(run.outcomes).map(([k, v]) => `${k} ${v}`).join(" · ") || "—" }));
  box.replaceChildren(
    el("p", { class: "muted", id: "replayed", text: t("replayed", { n: data.messages }) }),
    el("section", { class: "cards" }, card(t("now_thresholds"), now), card(t("changed"), changed),
      el("div", { class: "card" }, el("h2", { text: t("actual_sent") }), el("p", { class: "big", text: String(data.actual.sent) }))),
    el("div", { class: "card wide" }, plot(data)));
}

async function layout() {
  const groups = (await api("api/groups")).groups;
  const select = el("select", { id: "chat" }, ...groups.map((g) => el("option", { value: g.chat_id, text: g.chat_id })));
  if (chat) select.value = chat;
  const hours = el("input", { id: "hours", type: "number", min: "1", max: "168", value: "6" });
  const high = el("input", { id: "high", type: "number", step: "0.01", min: "0", max: "1", value: "0.65" });
  const medium = el("input", { id: "medium", type: "number", step: "0.01", min: "0", max: "1", value: "0.35" });
  document.getElementById("main").replaceChildren(
    el("header", { class: "page-head" }, el("h1", { text: t("whatif") })),
    el("p", { class: "muted", text: t("whatif_hint") }),
    el("div", { class: "toolbar" }, select, el("label", {}, t("hours") + " ", hours), el("label", {}, t("high") + " ", high),
      el("label", {}, t("medium") + " ", medium),
      el("button", { id: "run", text: t("run"), onclick: async () => {
        chat = select.value;
        result(await api("api/whatif", { chat, hours: Number(hours.value), high: Number(high.value), medium: Number(medium.value) }));
      } })),
    el("div", { id: "whatif-result" }));
}

(async () => {
  await GW.session();
  GW.nav("whatif", layout);
  await layout();
})();
