"""The overview: ``GET /api/overview``: the bot's state in cards (connections, messages, model use,
health, extensions, and whatever sections others added), today's tokens per group, the model's
use per feature (role) and tokens per day (the ledger's last two weeks, for the page's bars).

Everything is read from the parts' own ``statistics()`` and the token ledger; the edge's figures come
through ``ConsoleSite.edge_statistics`` as plain values, so an edge without some of them shows less.
Cost is the configured prices' (``[[models.providers]] price_per_1k_*``): per feature exactly, per
group estimated at the chat role's average price so far.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from runtime.console.origins import value_origins
from runtime.console.state import ConsoleState, console_state
from runtime.console.views import plain

__all__ = ["builtin_sections", "router"]

router = APIRouter()
TOP_GROUPS = 20
DAYS = 14


def _edge(state: ConsoleState) -> dict[str, Any]:
    figures = plain(state.site.edge_statistics())
    return figures if isinstance(figures, dict) else {}


def _connections(state: ConsoleState) -> list[tuple[str, Any]]:
    edge = _edge(state)
    rows: list[tuple[str, Any]] = [("connected", edge.get("connected_bots", []))]
    outbound = edge.get("outbound") or {}
    rate = outbound.get("rate") or {}
    if rate:
        rows.append(
            ("outbound_rate", f"{rate.get('rate_per_minute', 0):g}/min, backlog {rate.get('backlog', 0)}")
        )
    paused = [a for a in outbound.get("accounts", []) if a.get("state") != "closed"]
    rows.append(("restriction", [f"{a['account']}: {a['state']}" for a in paused] or "none"))
    rows.append(("sent_parts", outbound.get("sent_parts", 0)))
    rows.append(("shadow_parts", outbound.get("shadow_parts", 0)))
    summary = state.site.edge.edge_summary()
    if summary:
        rows.append(("accounts", summary))
    return rows


def _messages(state: ConsoleState) -> list[tuple[str, Any]]:
    kernel = state.runtime.kernel.statistics()
    return [
        ("per_minute", state.feed.per_minute()),
        ("heard", state.feed.heard),
        ("ingested", kernel.ingested),
        ("pending", kernel.scheduler.pending),
        ("groups", state.runtime.bot.core.groups.describe()),
    ]


def _model(state: ConsoleState) -> list[tuple[str, Any]]:
    router_stats = state.runtime.router.statistics()
    ledger = state.runtime.router.ledger
    today = ledger.day_of(state.clock())
    driver = state.runtime.driver.statistics()
    return [
        ("configured", router_stats.configured),
        ("calls", router_stats.calls),
        ("failed_calls", router_stats.failed_calls),
        ("fallbacks", router_stats.fallbacks),
        ("tokens_today", ledger.day_total(today)),
        ("episodes", driver.episodes),
        ("replied", driver.replied),
        ("model_failures", driver.model_failures),
    ]


def _health(state: ConsoleState) -> list[tuple[str, Any]]:
    edge = _edge(state)
    lag = edge.get("loop_lag") or {}
    writer = state.runtime.writer.statistics()
    rows: list[tuple[str, Any]] = []
    if lag:
        rows.append(
            (
                "loop_lag",
                f"p50 {lag['p50_ms']:.1f} ms, p95 {lag['p95_ms']:.1f} ms, max {lag['max_ms']:.1f} ms",
            )
        )
    rows.append(("writer", "failing" if writer.failing_since is not None else "ok"))
    rows.append(("writer_queue", f"{writer.queued}/{writer.queue_max}"))
    rows.append(("writer_written", writer.written))
    rows.append(("writer_dropped", writer.dropped))
    if writer.last_error:
        rows.append(("writer_error", writer.last_error[-200:]))
    return rows


def _extensions(state: ConsoleState) -> list[tuple[str, Any]]:
    loader = state.runtime.extension_loader
    return [("loaded", loader.loaded() or "none")]


def _accounts(state: ConsoleState) -> list[tuple[str, Any]]:
    """With several accounts: each listed one (QQ number and persona) online, offline or paused by a
    restriction; then the connected accounts no table lists (the default stack serves them)."""
    if not state.accounts:
        return []
    edge = _edge(state)
    connected = [str(bot) for bot in edge.get("connected_bots", [])]
    paused = {
        str(a.get("account")): a.get("state")
        for a in (edge.get("outbound") or {}).get("accounts", [])
        if a.get("state") != "closed"
    }
    rows: list[tuple[str, Any]] = []
    for account, view in state.accounts.items():
        status = "restricted" if account in paused else "online" if account in connected else "offline"
        rows.append((f"{account} {view.site.edge.config.persona.name}", status))
    unlisted = [bot for bot in connected if bot not in state.accounts]
    if unlisted:
        rows.append(("unlisted", unlisted))
    return rows


def _mcp(state: ConsoleState) -> list[tuple[str, Any]]:
    """One row per configured MCP server: its state, tools offered and withheld, its last error."""
    rows: list[tuple[str, Any]] = []
    for snap in state.runtime.mcp.snapshot():
        value: dict[str, Any] = {
            "state": snap["state"],
            "tools": len(snap["tools"]),
            "withheld": len(snap["withheld"]),
        }
        if snap.get("last_error"):
            value["last_error"] = str(snap["last_error"])[-200:]
        rows.append((snap["name"], value))
    return rows


def _origins(state: ConsoleState) -> list[tuple[str, Any]]:
    """With several accounts: every value this stack runs with that is not the built-in default, and
    where it comes from (the shared config or the account's own table)."""
    if not state.accounts:
        return []
    origins = value_origins(state.config_file, state.account)
    return [
        (key, {"value": value, "origin": origin})
        for key, (value, origin) in origins.items()
        if origin != "default"
    ]


def builtin_sections() -> list[tuple[str, Any]]:
    """The overview's own sections, in order (the state's added sections follow); a section with no
    rows is left off the page."""
    return [
        ("accounts", _accounts),
        ("connections", _connections),
        ("messages", _messages),
        ("model", _model),
        ("health", _health),
        ("extensions", _extensions),
        ("mcp", _mcp),
        ("origins", _origins),
    ]


def _per_feature(state: ConsoleState) -> list[dict[str, Any]]:
    roles: dict[str, dict[str, Any]] = {}
    for served in state.runtime.router.statistics().served:
        row = roles.setdefault(served.role, {"role": served.role, "calls": 0, "tokens": 0, "cost": None})
        row["calls"] += served.calls
        row["tokens"] += served.prompt_tokens + served.completion_tokens
        if served.cost is not None:
            row["cost"] = (row["cost"] or 0.0) + served.cost
    return sorted(roles.values(), key=lambda r: -r["tokens"])


def _per_group(state: ConsoleState, features: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ledger = state.runtime.router.ledger
    today = ledger.day_of(state.clock())
    chat = next((f for f in features if f["role"] == "chat"), None)
    price = chat["cost"] / chat["tokens"] if chat and chat["cost"] is not None and chat["tokens"] else None
    rows: list[dict[str, Any]] = [
        {
            "chat_id": entry.chat_id,
            "calls": entry.calls,
            "tokens": entry.total,
            "cost": round(entry.total * price, 6) if price is not None else None,
        }
        for entry in ledger.snapshot()
        if entry.day == today
    ]
    rows.sort(key=lambda r: -int(r["tokens"]))
    return rows[:TOP_GROUPS]


def _per_day(state: ConsoleState) -> list[dict[str, Any]]:
    """Tokens and calls per day over the ledger's last :data:`DAYS` days, oldest first."""
    days: dict[str, dict[str, Any]] = {}
    for entry in state.runtime.router.ledger.snapshot():
        row = days.setdefault(entry.day, {"day": entry.day, "tokens": 0, "calls": 0})
        row["tokens"] += entry.total
        row["calls"] += entry.calls
    return [days[day] for day in sorted(days)[-DAYS:]]


@router.get("/api/overview")
async def overview(request: Request) -> dict[str, Any]:
    state = console_state(request)
    edge = state.site.edge
    cards = []
    for title, rows in [*builtin_sections(), *state.sections]:
        try:
            shown = [[label, plain(value)] for label, value in rows(state)]
        except Exception as exc:  # one broken section must not blank the page
            shown = [["error", repr(exc)]]
        if shown:
            cards.append({"title": title, "rows": shown})
    features = _per_feature(state)
    return {
        "account": state.account,
        "persona": edge.config.persona.name,
        "shadow_mode": edge.shadow_mode,
        "model_ready": edge.model_configured,
        "cards": cards,
        "per_feature": features,
        "per_group": _per_group(state, features),
        "per_day": _per_day(state),
    }
