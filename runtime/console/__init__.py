"""The web console: operators see why the bot speaks, next to every message, and steer it.

A second edge over the same ports: it reads the running bot (the kernel's decisions through the why
log, the parts' statistics, the token ledger) and changes it only through the runtime's admin
control, the methods the chat commands call. Served by the bot's own HTTP server at ``/console/``
(the edge mounts what :func:`build_console` returns); on only with a password.

    switch.py    build_console: on, off or refused, and the log line (loads app.py only when on)
    app.py       console_app: the application
    auth.py      the password (argon2), sessions, the login rate limit
    security.py  ConsoleGuard: headers (CSP), 401 without a session, CSRF on changes
    feed.py      LiveFeed: per-chat bounded queues for the live view; messages per minute
    views.py     the runtime's values as JSON (reasons in both languages)
    state.py     ConsoleState: what every page reads (one view per account); the overview's sections
    origins.py   where each configured value comes from (default, config, account)
    pages/       one router per page: session, overview, live, group
    static/      the pages: HTML, one script per page, shared style and script
    __main__.py  ``python -m runtime.console set-password``
"""

from runtime.console.switch import build_console

__all__ = ["build_console"]
