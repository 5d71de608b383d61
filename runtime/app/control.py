"""The admin commands and mute words, answered by the runtime (``RuntimeControl``).

* ``status`` — for the whole bot, one short message (model, accounts and groups, tokens today,
  shadow mode); ``full`` adds every figure. Per chat: budget (speeches in window, next allowed),
  queue (pending activations), conversation threads, open sessions, tokens today; for the whole bot
  in full: the edge's lines, episodes,
  the loop's alarm, chats with most tokens today, the store writer (queue, failures, drops; since
  when and why while commits fail — also in a chat's status then).
* ``why`` — the attention score, decision and reasons of a message (by id, else the chat's latest),
  from a bounded map of recent ingest results per chat. The kernel's reason codes are said in Chinese
  (:mod:`runtime.app.reasons_zh`); the codes themselves stay as the kernel wrote them.
* ``mute`` / ``unmute`` — a quiet period: the edge has already closed or opened the send gate (so
  nothing, forced or not, is sent there); the runtime keeps it (and its kind: asked for by a member
  with a mute word, or imposed by a superuser's ``/mute``) across restarts and withdraws the chat's
  pending non-forced activations, so no model call is spent on words that cannot be said. The unmute
  phrase lifts only an asked period; ``/unmute`` lifts both.
* ``lexicon list|add|pin|suppress`` — the chat's group key of the dynamic lexicon.
* ``persona reload`` — re-reads ``[persona]`` from the config file; a bad value is refused with the
  key named and the running persona kept.
* ``enable`` / ``disable`` — whether the bot lives in a group (:mod:`runtime.groups`): kept in the
  data directory, over the config's ``[groups]``; disabling withdraws the chat's pending activations
  as a quiet period does. Both show in ``status``.
* ``set_thresholds`` — the console's per-chat high / medium attention thresholds over
  ``[attention]``, kept in the data directory (:mod:`runtime.app.persistence`).
* ``bind`` — binds the chat to a topic thread (an id, or a title: the thread of that title, else a
  new thread is made), with its vision, through the context's ThreadResolver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog

from runtime.app.episodes import EpisodeDriver
from runtime.app.loop import ActivationLoop
from runtime.app.persistence import StatePersistence
from runtime.app.persona import Persona
from runtime.app.reasons_zh import action_zh, decision_zh, reason_zh, state_zh
from runtime.app.why import WhyLog
from runtime.config import ConfigError, load_config
from runtime.config.accounts import account_config, resolved_values
from runtime.config.app import AppConfig
from runtime.context.packet import PersonaSlot
from runtime.context.setup import ContextRuntime
from runtime.episodes import WaitingRoom
from runtime.extensions import LifeDirector
from runtime.groups import GroupPolicy
from runtime.kernel.errors import KernelError
from runtime.kernel.events import EventState
from runtime.kernel.kernel import PERSONA_KEY, Kernel
from runtime.kernel.lexicon.terms import LexiconKey, LexiconScope, TermStatus
from runtime.llm.router import ModelRouter
from runtime.ports import EdgeContext, Outbound
from runtime.quiet import QUIET_ASKED, QUIET_IMPOSED, QuietPeriod
from runtime.store.records import OPEN_SESSION_STATES, TopicThread
from runtime.store.roles import ContextRows
from runtime.store.writer import StoreWriter

__all__ = ["Control", "ControlParts"]

log = structlog.get_logger("greywind.control")

_WAITING = (EventState.SCHEDULED, EventState.SNOOZED)
LEXICON_LIST_MAX = 30


def _ago(now: float, when: float | None) -> str:
    if when is None:
        return "从未"
    seconds = max(0, int(now - when))
    return f"{seconds} 秒前" if seconds < 120 else f"{seconds // 60} 分钟前"


@dataclass(frozen=True, slots=True)
class ControlParts:
    """What the admin commands read and change, given by the composition root."""

    edge: EdgeContext  # shadow mode, the edge's status, the config file, rename
    app: AppConfig
    clock: Callable[[], float]
    persona: Persona
    model_ready: bool
    kernel: Kernel
    room: WaitingRoom
    router: ModelRouter
    store: ContextRows
    writer: StoreWriter
    context: ContextRuntime
    outbound: Outbound
    persistence: StatePersistence
    quiet: dict[str, QuietPeriod]  # the runtime's, shared with its persistence
    groups: GroupPolicy  # the runtime's: the groups the bot lives in
    why: WhyLog
    loop: ActivationLoop  # for its statistics
    driver: EpisodeDriver  # for its statistics
    mcp_status: Callable[[], list[str]] = list  # one line per MCP server (runtime.mcp)
    director: LifeDirector | None = None  # its latest proactive decision per chat, for why


class Control:
    def __init__(self, parts: ControlParts) -> None:
        self._rt = parts

    # -- status / why -----------------------------------------------------------------------------

    async def status(self, chat_id: str | None, *, full: bool = False) -> str:
        rt = self._rt
        now = rt.clock()
        head = f"{rt.persona.name}在线（{'影子模式：只看不说' if rt.edge.shadow_mode else '正常发言'}）"
        if not rt.model_ready:
            head += "；未配置模型"
        if chat_id is None and full:
            parts = (head, rt.edge.edge_status(), self._overview(now), self._origins(None))
            return "\n".join(part for part in parts if part)
        if chat_id is None:
            return "\n".join(part for part in (head, *self._summary(now)) if part)
        chat = await self._chat_status(chat_id, now)
        return "\n".join((head, chat, self._origins(chat_id)) if full else (head, chat))

    def _origins(self, chat_id: str | None) -> str:
        """Where this stack's settings come from (default < account < group): every value that is
        not the shared default, with its layer; the count of the rest."""
        rt = self._rt
        overrides = rt.groups.overrides()
        group = {"groups.enabled": overrides[chat_id]} if chat_id in overrides else {}
        values = resolved_values(rt.edge.shared_config or rt.edge.config, rt.edge.account, group=group)
        layer = {"account": f"账号 {rt.edge.account}", "group": "本群"}
        own = [f"{v.key}={v.value}［{layer[v.origin]}］" for v in values if v.origin != "default"]
        rest = sum(v.origin == "default" for v in values)
        who = f"账号 {rt.edge.account}" if rt.edge.account else "默认账号设置"
        return f"配置（{who}；默认 < 账号 < 群）：" + "，".join([*own, f"其余 {rest} 项为默认"])

    def _summary(self, now: float) -> list[str]:
        """The whole bot in a few lines: the model, the accounts and groups, today's tokens; storage
        only when it is in trouble; where the rest is."""
        rt = self._rt
        chain = rt.router.chain("chat") if rt.model_ready else ()
        ledger = rt.router.ledger
        lines = [
            f"模型：{chain[0].model}" if chain else "",
            rt.edge.edge_summary(),
            rt.groups.describe(),
            f"今日 token：{ledger.day_total(ledger.day_of(now))}",
        ]
        writer = rt.writer.statistics()
        if writer.failing_since is not None or writer.dropped:
            lines.append(self._storage(now))
        lines.append(f"详情：{rt.edge.config.bot.command_prefix}status full")
        return lines

    def _overview(self, now: float) -> str:
        rt = self._rt
        loop = rt.loop.statistics()
        driver = rt.driver.statistics()
        kernel = rt.kernel.statistics()
        ledger = rt.router.ledger
        today = ledger.day_of(now)
        lines = [
            f"内核：收到 {kernel.ingested} 条，待激活 {kernel.scheduler.pending}，"
            f"等待中的回合 {rt.room.statistics().waiting}",
            f"回合：{driver.episodes} 次（回复 {driver.replied}，等待 {driver.waiting}，模型失败 "
            f"{driver.model_failures}），进行中 {loop.running}",
            f"今日 token：{ledger.day_total(today)}",
            rt.groups.describe(),
            self._storage(now),
            *rt.mcp_status(),
        ]
        return "\n".join(lines)

    def _storage(self, now: float) -> str:
        """The writer's health: a failing disk or a locked database shows here, not only in the log."""
        stats = self._rt.writer.statistics()
        line = (
            f"存储：已写 {stats.written}，排队 {stats.queued}/{stats.queue_max}，"
            f"写入失败 {stats.failures} 次，丢弃 {stats.dropped} 条"
        )
        if stats.failing_since is not None:
            failing = max(0, int(now - stats.failing_since))
            error = stats.last_error or ""
            # The end of the message says why (SQLite's own words); the start names the file.
            line += f"；写入失败中（{failing} 秒）：{error if len(error) <= 120 else '…' + error[-119:]}"
        return line

    async def _chat_status(self, chat_id: str, now: float) -> str:
        rt = self._rt
        actor = rt.kernel.budgets.get(chat_id)
        if actor is None:
            budget = "本窗口尚未发言"
        else:
            stats = actor.statistics(now)
            verdict = actor.peek(now)
            budget = (
                f"本窗口发言 {stats.normal_in_window}（被点名 {stats.forced_in_window}），上次 "
                f"{_ago(now, stats.last_speech_at)}；"
                + ("现在可以主动发言" if verdict.allowed else f"暂不主动发言：{reason_zh(verdict.reason)}")
            )
        queue = rt.kernel.events.list(chat_id=chat_id, states=_WAITING)
        threads = rt.kernel.threads.recent(chat_id, now, limit=50)
        sessions = await rt.store.list_sessions(chat_id=chat_id, states=OPEN_SESSION_STATES)
        ledger = rt.router.ledger
        used = ledger.used(chat_id, ledger.day_of(now))
        remaining = ledger.remaining(chat_id, ledger.day_of(now))
        tokens = f"{used}" + (f"（余 {remaining}）" if remaining is not None else "")
        gate = rt.outbound.gate(chat_id)
        lines = [
            f"{chat_id}：" + ("" if rt.groups.enabled(chat_id) else "已停用（只记录消息，不发言）"),
            f"预算：{budget}",
            f"队列：{len(queue)} 个待激活（" + "，".join(sorted({e.kind for e in queue})) + "）"
            if queue
            else "队列：空",
            f"对话线程：{len(threads)}；会话：{len(sessions)} 个未关闭",
            f"今日 token：{tokens}",
        ]
        if not gate.open:
            lines.append(f"不发言：{gate.label}")
        writer = rt.writer.statistics()
        if writer.failing_since is not None or writer.dropped:
            lines.append(self._storage(now))  # storage trouble shows in every chat's status
        return "\n".join(lines)

    async def why(self, chat_id: str, message_id: str | None) -> str:
        result = self._rt.why.get(chat_id, message_id)
        life = self._life_line(chat_id) if message_id is None else None
        if result is None:
            which = f"消息 {message_id}" if message_id else "最近的消息"
            missing = (
                f"{chat_id} 里找不到{which}的记录（只保留每个聊天最近 {self._rt.app.why_per_chat} 条）。"
            )
            return missing if life is None else f"{missing}\n{life}"
        attention = result.attention
        event = self._rt.kernel.events.get(result.event.id) or result.event
        skip = event.payload.get("skip_reason")
        lines = [
            f"消息 {result.message.message_id}（{result.message.sender_name or result.message.sender_id}）：",
            f"注意力 {attention.score:.2f} → {decision_zh(attention.decision.value)}；"
            f"处理：{action_zh(result.action.value)}（{reason_zh(result.reason)}）",
            "理由：" + ("；".join(map(reason_zh, attention.reasons)) if attention.reasons else "无"),
            f"事件 {event.id}：{state_zh(event.state.value)}"
            + (f"（{reason_zh(str(skip))}）" if skip else ""),
        ]
        if result.keyword_hits:
            lines.append("关键词：" + "，".join(dict.fromkeys(hit.term for hit in result.keyword_hits)))
        if life is not None:
            lines.append(life)
        return "\n".join(lines)

    def _life_line(self, chat_id: str) -> str | None:
        """The chat's latest proactive decision, said truthfully: spoke, did not (and why), or pending."""
        director = self._rt.director
        note = director.note(chat_id) if director is not None else None
        if note is None:
            return None
        when = _ago(self._rt.clock(), note.at)
        if note.spoke is None:
            return f"主动发言（{when}）：已排期，还没说——{note.reason.removeprefix('scheduled: ')}"
        if note.spoke:
            return f"主动发言（{when}）：开口了——{note.reason.removeprefix('spoke: ')}"
        return f"主动发言（{when}）：没有开口——{reason_zh(note.reason)}"

    # -- quiet periods ----------------------------------------------------------------------------

    async def mute(self, chat_id: str, until: float | None, *, by: str, reason: str) -> str:

        rt = self._rt
        now = rt.clock()
        kind = QUIET_ASKED if reason == "mute_word" else QUIET_IMPOSED
        # The edge did this too; harmless, and covers direct calls. An asked period does not replace
        # a superuser's.
        if not rt.outbound.gates.quiet(chat_id, until, kind, now=now):
            log.info("quiet_kept", chat_id=chat_id, by=by, reason=reason, kind=QUIET_IMPOSED)
            return ""
        rt.quiet[chat_id] = QuietPeriod(until, kind)
        rt.persistence.save_quiet(self._live_quiet(now))
        withdrawn = 0
        for event in rt.kernel.events.list(chat_id=chat_id, states=_WAITING):
            # Reminders and waiting episodes keep their place; they check the gate when they fire.
            if event.kind == "message" and rt.kernel.cancel(event.id, now, reason="quiet period"):
                withdrawn += 1
        log.info(
            "quiet_started",
            chat_id=chat_id,
            until=until,
            kind=kind,
            by=by,
            reason=reason,
            withdrawn=withdrawn,
        )
        if reason == "mute_word":
            return ""  # asked to be quiet: the quietest acknowledgement is none
        if until is None:
            return f"好，{chat_id} 里我先不说话，直到 /unmute。"
        minutes = max(1, round((until - now) / 60))
        return f"好，{chat_id} 里我安静 {minutes} 分钟。"

    async def unmute(self, chat_id: str, *, by: str, reason: str) -> str:
        """``reason="phrase"`` (a member said the unmute phrase) lifts only a period members asked for;
        a superuser's ``/unmute`` lifts either kind."""

        rt = self._rt
        current = rt.quiet.get(chat_id)
        if reason == "phrase" and current is not None and current.kind != QUIET_ASKED:
            log.info("quiet_lift_refused", chat_id=chat_id, by=by, kind=current.kind)
            return ""
        had = rt.quiet.pop(chat_id, None) is not None
        rt.outbound.gates.unquiet(chat_id, only=QUIET_ASKED if reason == "phrase" else None)
        rt.persistence.save_quiet(self._live_quiet(rt.clock()))
        log.info("quiet_lifted", chat_id=chat_id, by=by, reason=reason, had=had)
        return "" if reason == "phrase" else f"{chat_id} 已解除安静。"

    def _live_quiet(self, now: float) -> dict[str, QuietPeriod]:
        quiet = self._rt.quiet
        for chat in [c for c, period in quiet.items() if period.until is not None and period.until <= now]:
            del quiet[chat]
        return dict(quiet)

    # -- the groups the bot lives in --------------------------------------------------------------

    async def set_group(self, chat_id: str, on: bool, *, by: str) -> str:
        rt = self._rt
        changed = rt.groups.set(chat_id, on)
        saved = rt.persistence.save_groups(rt.groups.overrides())
        withdrawn = 0
        if not on:
            now = rt.clock()
            for event in rt.kernel.events.list(chat_id=chat_id, states=_WAITING):
                if event.kind == "message" and rt.kernel.cancel(event.id, now, reason="group disabled"):
                    withdrawn += 1
        log.info("group_set", chat_id=chat_id, on=on, by=by, changed=changed, withdrawn=withdrawn)
        if on:
            answer = f"{chat_id} 已启用：{rt.persona.name}会在这里说话。"
        else:
            answer = f"{chat_id} 已停用：{rt.persona.name}在这里只记录消息、不发言（/enable 恢复）。"
        return answer if saved else answer + "（没能写入数据目录，重启后会失效）"

    # -- per-chat attention thresholds (the console) ----------------------------------------------

    async def set_thresholds(self, chat_id: str, high: float | None, medium: float | None, *, by: str) -> str:
        """Override the chat's high / medium attention thresholds (None: the configured value; both
        None: no override). Kept in the data directory; a pair the kernel refuses changes nothing."""
        rt = self._rt
        try:
            weights = rt.kernel.set_thresholds(chat_id, high=high, medium=medium)
        except KernelError as exc:
            return f"阈值没有改：{exc}"
        overrides = rt.persistence.load_threshold_overrides()
        if high is None and medium is None:
            overrides.pop(chat_id, None)
        else:
            values = {"high": high, "medium": medium}
            overrides[chat_id] = {k: v for k, v in values.items() if v is not None}
        saved = rt.persistence.save_thresholds(overrides)
        log.info("thresholds_set", chat_id=chat_id, high=high, medium=medium, by=by)
        answer = f"{chat_id} 的阈值：高 {weights.high:.2f}，中 {weights.medium:.2f}"
        return answer if saved else answer + "（没能写入数据目录，重启后会失效）"

    # -- lexicon ----------------------------------------------------------------------------------

    async def lexicon_list(self, chat_id: str) -> str:
        lexicon = self._rt.kernel.lexicon
        key = LexiconKey(LexiconScope.GROUP, chat_id)
        terms = sorted(lexicon.terms(key), key=lambda t: (-t.weight, t.text))
        if not terms:
            return f"{chat_id} 的词表还是空的。"
        marks = {TermStatus.PINNED: "📌", TermStatus.SUPPRESSED: "🚫"}
        shown = [f"{marks.get(t.status, '')}{t.text}({t.weight:.2f})" for t in terms[:LEXICON_LIST_MAX]]
        more = f" …共 {len(terms)} 个" if len(terms) > LEXICON_LIST_MAX else ""
        return f"{chat_id} 词表：" + "，".join(shown) + more

    async def lexicon_add(self, chat_id: str, term: str, weight: float | None) -> str:
        lexicon = self._rt.kernel.lexicon
        key = LexiconKey(LexiconScope.GROUP, chat_id)
        try:
            added = lexicon.add(
                key, term, now=self._rt.clock(), source="admin", weight=1.0 if weight is None else weight
            )
        except Exception as exc:  # the lexicon's own refusal (too long, empty after normalising)
            return f"加不进去：{exc}"
        return f"已加入 {chat_id} 词表：{getattr(added, 'text', term)}"

    async def lexicon_pin(self, chat_id: str, term: str) -> str:
        lexicon = self._rt.kernel.lexicon
        key = LexiconKey(LexiconScope.GROUP, chat_id)
        pinned = lexicon.pin(key, term)
        if pinned is None:
            try:
                lexicon.add(key, term, now=self._rt.clock(), source="admin", status=TermStatus.PINNED)
            except Exception as exc:
                return f"钉不住：{exc}"
        return f"已钉住：{term}（不会衰减）"

    async def lexicon_suppress(self, chat_id: str, term: str) -> str:
        lexicon = self._rt.kernel.lexicon
        key = LexiconKey(LexiconScope.GROUP, chat_id)
        try:
            lexicon.suppress(key, term, now=self._rt.clock())
        except Exception as exc:
            return f"屏蔽失败：{exc}"
        return f"已屏蔽：{term}（不再匹配，也不再学习）"

    # -- persona / bind ---------------------------------------------------------------------------

    async def persona_reload(self) -> str:
        rt = self._rt
        try:
            fresh = load_config(rt.edge.config_path)
        except ConfigError as exc:
            return f"人格没有重载：{exc}"
        persona = account_config(fresh, rt.edge.account).persona  # an account's over the shared one
        if persona == rt.persona.config:
            return "人格配置没有变化。"
        rt.persona.replace(persona)
        rt.edge.rename(rt.persona.names)
        rt.context.builder._persona = PersonaSlot.from_config(persona)
        now = rt.clock()
        names = [n for n in rt.persona.names if len(n.strip()) >= 2]
        if names:
            for old in rt.kernel.lexicon.terms(PERSONA_KEY):
                rt.kernel.lexicon.remove(PERSONA_KEY, old.text)
            rt.kernel.lexicon.add(
                PERSONA_KEY, names[0], now=now, aliases=names[1:], source="persona", status=TermStatus.PINNED
            )
        log.info("persona_reloaded", name=persona.name)
        return f"人格已重载：{persona.name}（称呼识别即刻改用新名字；新对话起用新的人格设定）"

    async def _titled(self, title: str, chat_id: str) -> TopicThread | None:
        """The topic thread called ``title`` (case and spaces aside), so binding a title twice rebinds
        instead of making a second topic: one this chat already sees first, else the latest updated."""
        wanted = title.strip().casefold()
        named = [t for t in await self._rt.store.list_topic_threads() if t.title.strip().casefold() == wanted]
        seen = [t for t in named if chat_id in t.chat_ids]
        found = seen or named
        return found[0] if found else None

    async def bind(self, chat_id: str, thread: str, vision: str | None) -> str:
        rt = self._rt
        now = rt.clock()
        resolver = rt.context.resolver
        existing = await rt.store.get_topic_thread(thread) or await self._titled(thread, chat_id)
        if existing is None:
            made = await resolver.create(
                chat_id, thread, now=now, vision={"origin_goal": vision} if vision else None, bind=True
            )
            return f"已把 {chat_id} 绑定到新主题「{made.title}」（{made.id}）" + (
                f"，愿景：{vision}" if vision else ""
            )
        bound = await resolver.bind(chat_id, existing.id, now=now)
        if vision:
            from dataclasses import replace

            bound = replace(bound, vision={**bound.vision, "origin_goal": vision}, updated_at=now)
            await rt.store.upsert_topic_thread(bound)
        stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d %H:%M UTC")
        return f"已把 {chat_id} 绑定到主题「{bound.title}」（{bound.id}，{stamp}）"
