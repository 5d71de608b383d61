// Shared by every page: the language (Chinese first), the API calls with the CSRF token, the nav.
// Chat text is only ever put into the page with textContent (el(), text()), never as HTML.
"use strict";

const GW = (() => {
  const WORDS = {
    zh: {
      title: "灰风控制台", overview: "概览", live: "实时", group: "群设置", logout: "退出",
      login: "登录", password: "密码", wrong: "密码不对", limited: "失败次数太多，请稍后再试",
      connections: "连接", messages: "消息", model: "模型", health: "运行状况", extensions: "扩展",
      connected: "已连接账号", outbound_rate: "发送速率", restriction: "风控暂停", sent_parts: "已发送",
      shadow_parts: "影子模式未发送", accounts: "账号", per_minute: "每分钟消息", heard: "已收到",
      ingested: "内核处理", pending: "待激活", groups: "群", configured: "已配置模型", calls: "模型调用",
      failed_calls: "失败调用", fallbacks: "备用模型", tokens_today: "今日 token", episodes: "回合",
      loop_lag: "事件循环延迟", writer: "存储写入", writer_queue: "写入队列", writer_written: "已写入",
      writer_dropped: "已丢弃", writer_error: "写入错误", loaded: "已加载", none: "无", ok: "正常",
      failing: "失败中", per_feature: "按功能（启动以来的模型用量）", per_day: "每天的 token", replied: "回复", model_failures: "模型失败", per_group: "今日按群", role: "功能",
      tokens: "token", cost: "费用", chat: "聊天", shadow: "影子模式：只看不说", speaking: "正常发言",
      pick_group: "选择群", filter: "筛选…", score: "注意力", decision: "决定", reasons: "理由",
      state: "状态", budget: "预算", allowed: "现在可以主动发言", blocked: "暂不主动发言",
      in_window: "本窗口发言", pending_acts: "待激活", empty: "空", reply: "回复", would_reply: "本会回复（影子模式）",
      dropped: "浏览器太慢，跳过了 {n} 条", enabled: "启用", disabled: "已停用", enable: "启用", disable: "停用",
      mute: "安静", unmute: "解除安静", minutes: "分钟（空：直到解除）", thresholds: "阈值", high: "高",
      medium: "中", save: "保存", reset: "恢复默认", origin_default: "默认", origin_config: "配置",
      origin_group: "本群", lexicon: "词表", add: "添加", pin: "钉住", suppress: "屏蔽", term: "词",
      weight: "权重", source: "来源", status: "状态", gate: "发送", open: "开放", quiet: "安静中",
      live_hint: "每条消息旁边：灰风为什么说话或不说话。", keywords: "关键词", thread: "线程",
      lang: "English", settings_of: "设置", min_interval_ms: "最短间隔 (ms)", max_per_window: "每窗口最多",
      window_ms: "窗口 (ms)", value: "值", origin: "来源", no_messages: "还没有消息",
      config: "配置", logs: "日志", effective: "生效中的配置（密钥已打码）", edited: "编辑副本（只校验，不写入）",
      validate: "校验", valid: "校验通过：这份配置可以用", reload_persona: "重载人格", level: "级别",
      all_chats: "所有聊天", paused: "暂停", resume: "继续", restart_note: "除人格外，其它改动要重启才生效。",
      memory: "记忆", summary: "滚动摘要", memories: "记忆条目", speaker: "说话人", source_message: "出处",
      delete: "删除", forget_user: "忘掉这个人", sessions: "会话", topics: "主题线程与交接", content: "内容",
      deleted_n: "已删除 {n} 条", type: "类型", scope: "范围",
      whatif: "假如", hours: "最近几小时", run: "重放", now_thresholds: "现在的阈值", changed: "改动后",
      would_speak: "会发言", actual_sent: "实际发送", replayed: "重放了 {n} 条消息", whatif_hint: "用重放引擎把这个群最近的消息按改动后的阈值再过一遍：模型按立即回答计。",
      account: "账号", default_stack: "默认（未列出的账号）", online: "在线", offline: "离线", restricted: "风控暂停中",
      unlisted: "未列出的已连接账号", mcp: "MCP 服务", up: "正常", down: "断开", connecting: "连接中",
      withheld: "未开放", last_error: "最近错误", origins: "配置来源（非默认值）", origin_account: "本账号",
    },
    en: {
      title: "GreyWind console", overview: "Overview", live: "Live", group: "Group settings", logout: "Log out",
      login: "Log in", password: "Password", wrong: "Wrong password", limited: "Too many failures, try later",
      connections: "Connections", messages: "Messages", model: "Model", health: "Health", extensions: "Extensions",
      connected: "Connected accounts", outbound_rate: "Outbound rate", restriction: "Restriction pause",
      sent_parts: "Sent", shadow_parts: "Not sent (shadow)", accounts: "Accounts", per_minute: "Messages/min",
      heard: "Heard", ingested: "Ingested", pending: "Pending", groups: "Groups", configured: "Model configured",
      calls: "Model calls", failed_calls: "Failed calls", fallbacks: "Fallbacks", tokens_today: "Tokens today",
      episodes: "Episodes", loop_lag: "Loop lag", writer: "Store writer", writer_queue: "Writer queue",
      writer_written: "Written", writer_dropped: "Dropped", writer_error: "Writer error", loaded: "Loaded",
      none: "none", ok: "ok", failing: "failing", per_feature: "Per feature (model use since start)", per_day: "Tokens per day", replied: "Replied", model_failures: "Model failures",
      per_group: "Per group today", role: "Feature", tokens: "Tokens", cost: "Cost", chat: "Chat",
      shadow: "Shadow mode: reads, says nothing", speaking: "Speaking", pick_group: "Pick a group",
      filter: "Filter…", score: "Attention", decision: "Decision", reasons: "Reasons", state: "State",
      budget: "Budget", allowed: "May speak now", blocked: "Holding back", in_window: "Spoken in window",
      pending_acts: "Pending", empty: "empty", reply: "Reply", would_reply: "Would reply (shadow)",
      dropped: "Browser too slow: {n} skipped", enabled: "Enabled", disabled: "Disabled", enable: "Enable",
      disable: "Disable", mute: "Mute", unmute: "Unmute", minutes: "minutes (empty: until lifted)",
      thresholds: "Thresholds", high: "High", medium: "Medium", save: "Save", reset: "Reset",
      origin_default: "default", origin_config: "config", origin_group: "group", lexicon: "Lexicon", add: "Add",
      pin: "Pin", suppress: "Suppress", term: "Term", weight: "Weight", source: "Source", status: "Status",
      gate: "Sending", open: "open", quiet: "quiet", live_hint: "Next to every message: why the bot spoke or not.",
      keywords: "Keywords", thread: "Thread", lang: "中文", settings_of: "Settings", min_interval_ms: "Min interval (ms)",
      max_per_window: "Max per window", window_ms: "Window (ms)", value: "Value", origin: "Origin",
      no_messages: "No messages yet",
      config: "Config", logs: "Logs", effective: "Effective configuration (secrets masked)",
      edited: "Edited copy (validated, never written)", validate: "Validate", valid: "Valid: this configuration can be used",
      reload_persona: "Reload persona", level: "Level", all_chats: "all chats", paused: "Pause", resume: "Resume",
      restart_note: "Apart from the persona, changes take a restart.",
      memory: "Memory", summary: "Rolling summary", memories: "Memories", speaker: "Speaker", source_message: "Source",
      delete: "Delete", forget_user: "Forget this user", sessions: "Sessions", topics: "Topic threads and handoffs",
      content: "Content", deleted_n: "{n} deleted", type: "Type", scope: "Scope",
      whatif: "What if", hours: "Last hours", run: "Replay", now_thresholds: "Thresholds now", changed: "Changed",
      would_speak: "Would speak", actual_sent: "Actually sent", replayed: "{n} messages replayed",
      whatif_hint: "The replay engine runs the group's recent messages again under the changed thresholds (the model taken to answer at once).",
      account: "Account", default_stack: "Default (accounts not listed)", online: "online", offline: "offline",
      restricted: "paused by a restriction", unlisted: "Connected, not listed", mcp: "MCP servers", up: "up",
      down: "down", connecting: "connecting", withheld: "withheld", last_error: "last error",
      origins: "Where values come from (non-default)", origin_account: "account",
    },
  };
  // The pages in the nav, in order; a page is <name>.html (the overview is index.html) and <name>.js.
  const PAGES = ["overview", "live", "group", "memory", "whatif", "config", "logs"];
  let lang = localStorage.getItem("gw-lang") === "en" ? "en" : "zh";
  let csrf = sessionStorage.getItem("gw-csrf") || "";
  // The account every page and API call works on (?account=, kept across the nav); "" the default.
  const params = new URLSearchParams(location.search);
  const account = params.get("account") || "";
  let accounts = [];

  // ``path`` (a page or an API route, maybe with its own query) for the selected account.
  function withAccount(path) {
    if (!account) return path;
    const [base, hash] = path.split("#");
    return base + (base.includes("?") ? "&" : "?") + "account=" + encodeURIComponent(account) + (hash ? "#" + hash : "");
  }

  function t(key, vars) {
    let word = (WORDS[lang] && WORDS[lang][key]) || WORDS.zh[key] || key;
    for (const [k, v] of Object.entries(vars || {})) word = word.replace("{" + k + "}", String(v));
    return word;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  async function api(path, body) {
    const init = { credentials: "same-origin", headers: {} };
    if (body !== undefined) {
      init.method = "POST";
      init.headers["Content-Type"] = "application/json";
      init.headers["X-CSRF-Token"] = csrf;
      init.body = JSON.stringify(body);
    }
    const response = await fetch(withAccount(path), init);
    if (response.status === 401 && !path.endsWith("api/login")) {
      location.href = "login.html";
      return new Promise(() => {}); // the page is leaving: nothing more to do here
    }
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw Object.assign(new Error(data.error || response.statusText), { status: response.status, data });
    return data;
  }

  async function session() {
    const data = await api("api/session").catch((exc) => {
      // ?account= names an account this process does not serve: say so instead of a blank page.
      const main = document.getElementById("main");
      if (exc.status === 404 && main) main.replaceChildren(el("p", { id: "error", class: "warn", text: exc.message }));
      throw exc;
    });
    csrf = data.csrf;
    sessionStorage.setItem("gw-csrf", csrf);
    accounts = data.accounts || [];
    return data;
  }

  function setCsrf(token) {
    csrf = token;
    sessionStorage.setItem("gw-csrf", token);
  }

  function applyWords(root) {
    document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
    for (const node of (root || document).querySelectorAll("[data-t]")) node.textContent = t(node.dataset.t);
    for (const node of (root || document).querySelectorAll("[data-tp]")) node.placeholder = t(node.dataset.tp);
  }

  function nav(current, onLang) {
    const bar = document.getElementById("nav");
    if (!bar) return;
    bar.replaceChildren(
      el("span", { class: "brand", text: t("title") }),
      ...PAGES.map((page) =>
        el("a", { href: withAccount(page === "overview" ? "index.html" : page + ".html"), class: page === current ? "here" : "", text: t(page) })),
      el("span", { class: "grow" }),
      ...(accounts.length ? [accountPicker()] : []),
      el("button", { class: "ghost", id: "lang", text: t("lang"), onclick: () => {
        lang = lang === "zh" ? "en" : "zh";
        localStorage.setItem("gw-lang", lang);
        nav(current, onLang);
        applyWords();
        if (onLang) onLang();
      } }),
      el("button", { class: "ghost", id: "logout", text: t("logout"), onclick: async () => {
        await api("api/logout", {}).catch(() => null);
        sessionStorage.removeItem("gw-csrf");
        location.href = "login.html";
      } }),
    );
  }

  // With several accounts: a selector in the header; picking one opens this page for that account
  // (a chat picked on the page belongs to the account it came from, so it is not carried over).
  function accountPicker() {
    const select = el("select", { id: "account", "aria-label": t("account"), onchange: () => {
      const next = new URLSearchParams();
      if (select.value) next.set("account", select.value);
      location.href = location.pathname + (select.value ? "?" + next : "");
    } },
      el("option", { value: "", text: t("default_stack") }),
      ...accounts.map((a) => el("option", { value: a.id, text: `${a.id} ${a.persona}` })));
    select.value = account;
    return el("label", { class: "account" }, t("account") + " ", select);
  }

  function when(seconds) {
    if (!seconds) return "";
    return new Date(seconds * 1000).toLocaleTimeString(lang === "zh" ? "zh-CN" : "en-GB", { hour12: false });
  }

  function hue(text) {
    let h = 0;
    for (const ch of text || "") h = (h * 31 + ch.charCodeAt(0)) % 360;
    return h;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") node.textContent = v;
      else node.setAttribute(k, String(v));
    }
    node.append(...children);
    return node;
  }

  return { t, el, svg, api, session, setCsrf, applyWords, nav, when, hue, params, withAccount, account, get lang() { return lang; } };
})();
