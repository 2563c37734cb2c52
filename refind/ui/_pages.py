"""The pages of ``refind ui``, rendered as strings: pure functions over refind's public models.

Every value that comes from the index or the request goes through :func:`_e` (``html.escape`` with quotes)
or into a URL through :func:`_url`, so a message that holds ``<script>`` shows as text. The pages carry no
script at all (the app's Content-Security-Policy forbids one too); the style sheet is :data:`STYLE`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, tzinfo
from urllib.parse import quote, urlencode

import refind

SESSION_PAGE = 50
"""Turns shown on one page of a session."""
LIST_PAGE = 50
"""Sessions listed on one page of the home page."""
HIT_CHARS = 4000
"""A hit turn longer than this is cut on the results page (the session page shows it whole)."""
CONTEXT_CHARS = 600
"""A context turn (the window around a hit) longer than this is cut on the results page."""

STYLE = """\
:root { --ink: #1d2430; --dim: #6b7380; --line: #dde1e7; --hit: #fff4c2; --hitbar: #e0a800; --accent: #2457c5; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       margin: 0; background: #f6f7f9; }
header { background: #fff; border-bottom: 1px solid var(--line); padding: 12px 24px; }
header a.home { font-weight: 700; color: var(--ink); text-decoration: none; margin-right: 16px; }
main { max-width: 920px; margin: 0 auto; padding: 16px 24px 48px; }
form.search { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; }
form.search input[type=search] { flex: 1 1 320px; font-size: 16px; padding: 7px 10px; border: 1px solid #b9c0ca;
       border-radius: 6px; }
form.search select, form.search button, form.filter button { font-size: 14px; padding: 7px 10px; border-radius: 6px;
       border: 1px solid #b9c0ca; background: #fff; }
form.search button, form.filter button { background: var(--accent); color: #fff; border-color: var(--accent); }
h1 { font-size: 20px; margin: 18px 0 4px; }
.meta { color: var(--dim); font-size: 13px; }
.session { background: #fff; border: 1px solid var(--line); border-radius: 8px; margin: 14px 0; padding: 10px 14px; }
.session h2 { font-size: 16px; margin: 0; }
.session h2 a { color: var(--ink); text-decoration: none; }
.session h2 a:hover { text-decoration: underline; }
.source { display: inline-block; font-size: 12px; padding: 0 6px; border-radius: 4px; background: #e8edf7;
       color: #27406f; margin-right: 6px; }
ol.turns { list-style: none; margin: 8px 0 0; padding: 0; }
li.turn { display: grid; grid-template-columns: 3.2em 9.5em 6.5em 1fr; gap: 6px; padding: 4px 6px;
       border-left: 4px solid transparent; }
li.turn .n, li.turn .when { color: var(--dim); font-size: 12px; padding-top: 2px; }
li.turn .who { font-weight: 600; }
li.turn .who.user { color: #8a2a8a; }
li.turn .who.assistant { color: #1f5fa8; }
li.turn .text { white-space: pre-wrap; overflow-wrap: anywhere; }
li.context .text { color: #4a5260; }
li.hit { background: var(--hit); border-left-color: var(--hitbar); }
li.hit .n::before { content: "\\25B6 "; color: var(--hitbar); }
li.gap { color: var(--dim); padding-left: 3.6em; }
.cut { color: var(--dim); font-style: italic; }
nav.pages { margin: 16px 0; display: flex; gap: 16px; }
.problem { background: #fff; border: 1px solid #e5b3b3; border-left: 4px solid #c73b3b; border-radius: 6px;
       padding: 10px 14px; margin: 16px 0; }
table.sessions { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line); }
table.sessions th, table.sessions td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line);
       font-size: 14px; vertical-align: top; }
table.sessions td.num { text-align: right; }
mark { background: #ffd95a; color: inherit; padding: 0 1px; border-radius: 2px; }
.derived { font-style: italic; }
.sep { color: var(--dim); }
.dates { white-space: nowrap; }
fieldset.filters { border: 0; padding: 0; margin: 8px 0 0; display: flex; gap: 8px; flex-wrap: wrap;
       align-items: center; font-size: 13px; color: var(--dim); }
fieldset.filters label { display: inline-flex; gap: 4px; align-items: center; }
fieldset.filters input[type=date], fieldset.filters select { font-size: 13px; padding: 4px 6px;
       border: 1px solid #b9c0ca; border-radius: 6px; background: #fff; }
nav.order { margin: 6px 0; font-size: 13px; }
nav.order a, nav.order strong { margin-right: 12px; }
header a.about { margin-left: 4px; font-size: 14px; color: var(--accent); white-space: nowrap; }
table.facts { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line); }
table.facts th, table.facts td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line);
       font-size: 14px; vertical-align: top; }
table.facts tr.superseded td.what { color: var(--dim); text-decoration: line-through; }
.badge { display: inline-block; font-size: 11px; padding: 0 5px; border-radius: 4px; margin-left: 4px;
       background: #e6f4ea; color: #1e6b34; }
.badge.superseded, .badge.hidden { background: #f1f2f4; color: var(--dim); }
form.mark { display: inline-flex; gap: 4px; margin: 0 4px 2px 0; }
form.mark button, form.mark select { font-size: 12px; padding: 2px 8px; border-radius: 5px; border: 1px solid #b9c0ca;
       background: #fff; cursor: pointer; }
li.turn form.mark { margin-left: 6px; }
.notice { background: #eef4ff; border: 1px solid #bcd0f5; border-radius: 6px; padding: 8px 12px; margin: 12px 0; }
"""


def _e(value: object) -> str:
    """``value`` as HTML text: ``& < > " '`` escaped."""
    return html.escape(str(value), quote=True)


def _url(path: str, **params: object) -> str:
    """``path`` with the given query parameters (None ones left out), escaped for an HTML attribute."""
    query = urlencode(
        [(k, v) for k, v in params.items() if v is not None and v != ""], doseq=True, quote_via=quote
    )
    return _e(path + ("?" + query if query else ""))


def session_path(session_id: str) -> str:
    """The URL path of a session's page (the id percent-encoded, slashes too)."""
    return "/session/" + quote(session_id, safe="")


@dataclass(frozen=True)
class View:
    """What a page is scoped to, as the search box's fields hold it: the query, source and project, the
    period (``since`` / ``until``, days as ``YYYY-MM-DD``), the day the search is asked as of (``asof``), the
    order of results (``best`` or ``time``), and the menus' choices. ``tz`` is the zone dates are shown in."""

    query: str = ""
    source: str | None = None
    project: str | None = None
    since: str | None = None
    until: str | None = None
    asof: str | None = None
    order: str = "best"
    sources: Sequence[str] = ()
    projects: Sequence[str] = ()
    tz: tzinfo | None = None

    def params(self, **changed: object) -> dict[str, object]:
        """The search's query parameters (the default order left out), with ``changed`` ones."""
        values: dict[str, object] = {
            "q": self.query, "source": self.source, "project": self.project, "since": self.since,
            "until": self.until, "asof": self.asof, "order": None if self.order == "best" else self.order,
        }  # fmt: skip
        values.update(changed)
        return values


def _page(title: str, body: str, view: View, *, user: str = "") -> str:
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)} · refind</title><link rel=stylesheet href=/style.css></head><body>"
        f"<header>{_search_form(view, user)}</header>"
        f"<main>{body}</main></body></html>\n"
    )


def _options(name: str, label: str, values: Sequence[str], chosen: str | None) -> str:
    if not values and chosen is None:
        return ""
    items = [f'<option value="">{_e(label)}</option>']
    for v in sorted(set(values) | ({chosen} if chosen else set())):
        selected = " selected" if v == chosen else ""
        items.append(f'<option value="{_e(v)}"{selected}>{_e(v)}</option>')
    return f'<select name={name} aria-label="{_e(label)}">{"".join(items)}</select>'


def _date_input(name: str, label: str, value: str | None) -> str:
    return (
        f'<label>{_e(label)} <input type=date name={name} value="{_e(value or "")}" '
        f'aria-label="{_e(label)}"></label>'
    )


def _search_form(view: View, user: str) -> str:
    order = "".join(
        f"<option value={v}{' selected' if view.order == v else ''}>{label}</option>"
        for v, label in (("best", "best first"), ("time", "in time order"))
    )
    return (
        "<form class=search action=/search method=get role=search>"
        f'<a class=home href=/ title="{_e(user)}&#x27;s sessions">refind</a>'
        f'<input type=search name=q value="{_e(view.query)}" placeholder="Search your history" '
        'aria-label="Search your history" autofocus required>'
        + _options("source", "any source", view.sources, view.source)
        + _options("project", "any project", view.projects, view.project)
        + "<button type=submit>Search</button>"
        + f'<a class=about href=/about title="what {_e(user)} said that stands">About you</a>'
        + "<fieldset class=filters>"
        + _date_input("since", "from", view.since)
        + _date_input("until", "to", view.until)
        + _date_input("asof", "as of", view.asof)
        + f'<select name=order aria-label="order">{order}</select>'
        + "</fieldset></form>"
    )


SEP = "<span class=sep> · </span>"
"""What separates the parts of a session's line (source, project, dates, id)."""


def _meta(source: str | None, project: str | None, *rest: str) -> str:
    """A session's line: its source (a badge), project and the other parts (HTML), separated."""
    parts = [f"<span class=source>{_e(source)}</span>"] if source else []
    parts += [f"<span class=project>{_e(project)}</span>"] if project else []
    return SEP.join([*parts, *(r for r in rest if r)])


def _dates(first: int, last: int, tz: tzinfo | None) -> str:
    """A session's period as HTML, compact (:func:`refind.format_range`) and kept on one line."""
    return f"<span class=dates>{_e(refind.format_range(first, last, tz=tz))}</span>"


def _title(title: str | None, derived: bool, fallback: str) -> str:
    """A session's title as HTML: one derived from its first message in quotes, in italics."""
    if not title:
        return _e(fallback)
    if derived:
        return f'<span class=derived title="its first message (the import gave it no title)">“{_e(title)}”</span>'
    return _e(title)


def _marked(text: str, terms: Sequence[str]) -> str:
    """``text`` as HTML, the words the search matched (``terms``: analyzed, :func:`refind.match_spans`)
    in ``<mark>``."""
    if not terms:
        return _e(text)
    out, at = [], 0
    for lo, hi in refind.match_spans(text, terms):
        out += [_e(text[at:lo]), f"<mark>{_e(text[lo:hi])}</mark>"]
        at = hi
    out.append(_e(text[at:]))
    return "".join(out)


def _cut(text: str, limit: int | None, terms: Sequence[str] = ()) -> str:
    if limit is None or len(text) <= limit:
        return _marked(text, terms)
    return (
        _marked(text[:limit], terms)
        + f"<span class=cut> … ({len(text) - limit:,} more characters in the session)</span>"
    )


def _turn(
    t: refind.Turn | refind.Hit,
    *,
    hit: bool,
    limit: int | None,
    tz: tzinfo | None = None,
    terms: Sequence[str] = (),
    marking: str = "",
) -> str:
    role = t.role if t.role in ("user", "assistant") else "other"
    kind = "hit" if hit else "context"
    label = " (hit)" if hit else ""
    return (
        f'<li class="turn {kind}" id=t{int(t.turn)} data-turn={int(t.turn)}>'
        f'<span class=n title="turn {int(t.turn)}{label}">{int(t.turn)}</span>'
        f"<span class=when>{_e(refind.format_date(t.timestamp, 'minute', tz=tz))}</span>"
        f'<span class="who {role}">{_e(t.speaker or t.role)}</span>'
        f"<span class=text>{_cut(t.content, limit, terms)}{marking}</span></li>"
    )


@dataclass(frozen=True)
class Corrections:
    """What the pin and hide forms of a page need: the secret each form carries (``csrf``: made at each start
    of the page, checked on every correction, so a page elsewhere cannot post one), and the marks of the
    person's messages (message id -> ``pinned`` or ``hidden``)."""

    csrf: str
    marks: dict[str, str]


KINDS = ("fact", "instruction", "preference")
"""The kinds a message can be pinned as (:meth:`refind.Memory.pin`)."""


def _mark_form(action: str, message_id: str, label: str, c: Corrections, back: str, kind: str = "") -> str:
    """A form that posts one correction (``action``: pin, hide or unpin) of ``message_id``, then comes back to
    ``back``; with ``kind``, a menu of the kinds to pin as, ``kind`` chosen."""
    menu = ""
    if kind:
        options = "".join(f"<option value={k}{' selected' if k == kind else ''}>{k}</option>" for k in KINDS)
        menu = f'<select name=kind aria-label="pin as">{options}</select>'
    return (
        f'<form class=mark method=post action="/about/{action}">'
        f'<input type=hidden name=csrf value="{_e(c.csrf)}">'
        f'<input type=hidden name=id value="{_e(message_id)}">'
        f'<input type=hidden name=back value="{_e(back)}">'
        f"{menu}<button type=submit name=do value={action}>{_e(label)}</button></form>"
    )


# ---------------------------------------------------------------------------------------------- pages


def problem_page(status: int, message: str, *, hint: str = "", user: str = "", query: str = "") -> str:
    """A page that says what was wrong with the request (the body of a 4xx answer)."""
    body = f"<h1>{_e(_REASONS.get(status, 'Error'))}</h1><div class=problem role=alert><p>{_e(message)}</p>"
    if hint:
        body += f"<p class=meta>{_e(hint)}</p>"
    body += '</div><p><a href="/">Back to the sessions</a></p>'
    return _page(_REASONS.get(status, "Error"), body, View(query=query), user=user)


_REASONS = {
    400: "Bad request",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Too large",
    415: "Not a form",
    422: "Bad request",
    503: "Index unavailable",
}


def home_page(
    user: str, rows: Sequence[refind.SessionSummary], *, offset: int, more: bool, view: View
) -> str:
    """The list of ``user``'s sessions, the most recent first, paged by :data:`LIST_PAGE`."""
    scope = _scope_text(view)
    body = f"<h1>{_e(user)}'s sessions</h1>"
    if scope:
        body += f"<p class=meta>Only {_e(scope)}. <a href=/>All sessions</a></p>"
    body += (
        "<form class=filter action=/ method=get><fieldset class=filters>"
        + _options("source", "any source", view.sources, view.source)
        + _options("project", "any project", view.projects, view.project)
        + _date_input("since", "from", view.since)
        + _date_input("until", "to", view.until)
        + "<button type=submit>Show</button></fieldset></form>"
    )
    if not rows:
        body += "<p>No sessions." + (f" (none after the first {offset})" if offset else "") + "</p>"
    else:
        body += (
            "<table class=sessions><thead><tr><th>title</th><th>source</th><th>dates</th>"
            "<th class=num>messages</th></tr></thead><tbody>"
        )
        for r in rows:
            when = _dates(r.first, r.last, view.tz)
            body += (
                f'<tr data-session="{_e(r.session_id)}"><td><a href="{_url(session_path(r.session_id))}">'
                f"{_title(r.title, r.title_derived, r.session_id)}</a></td>"
                f"<td>{_meta(r.source, r.project)}</td><td class=when>{when}</td>"
                f"<td class=num>{int(r.messages)}</td></tr>"
            )
        body += "</tbody></table>"
    keep = {"source": view.source, "project": view.project, "since": view.since, "until": view.until}
    body += _pager(
        _url("/", offset=max(0, offset - LIST_PAGE), **keep) if offset else None,
        _url("/", offset=offset + LIST_PAGE, **keep) if more else None,
    )
    return _page(f"{user}'s sessions", body, view, user=user)


def _scope_text(view: View) -> str:
    """What the list or the results are restricted to, in words."""
    parts = [v for v in (view.source, view.project) if v]
    if view.since and view.until:
        parts.append(f"from {view.since} to {view.until}")
    elif view.since:
        parts.append(f"from {view.since}")
    elif view.until:
        parts.append(f"until {view.until}")
    return " · ".join(parts)


def _pager(previous: str | None, following: str | None) -> str:
    if previous is None and following is None:
        return ""
    links = [f'<a rel=prev href="{previous}">← previous</a>'] if previous is not None else []
    links += [f'<a rel=next href="{following}">next →</a>'] if following is not None else []
    return "<nav class=pages>" + "".join(links) + "</nav>"


def _groups(blocks: Iterable[refind.Evidence]) -> list[list[refind.Evidence]]:
    groups: list[list[refind.Evidence]] = []
    for block in blocks:
        if groups and groups[-1][0].session_id == block.session_id:
            groups[-1].append(block)
        else:
            groups.append([block])
    return groups


def results_page(
    user: str, result: refind.SearchResult, view: View, titles: dict[str, str] | None = None
) -> str:
    """The evidence for a query, grouped by session: the best sessions first (``view.order == "best"``) or
    in time order; hit turns marked, the words that matched highlighted. ``titles``: titles derived from
    their first message for the sessions without one."""
    titles = titles or {}
    if view.order == "time":
        groups = _groups(b for b in result.evidence if not b.standing)
    else:  # each session where its best block ranks, its blocks in turn order
        ranked: dict[str, list[refind.Evidence]] = {}
        for b in result.by_relevance():
            if not b.standing:
                ranked.setdefault(b.session_id, []).append(b)
        groups = [sorted(bs, key=lambda b: b.first_turn) for bs in ranked.values()]
    question = result.question
    body = f"<h1>Results for “{_e(question)}”</h1>"
    scope = _scope_text(view)
    hits = sum(1 for g in groups for b in g for t in b.turns if t.matched)
    asked = ""
    if view.asof:
        day = date.fromisoformat(view.asof)
        asked = f" · as of {day:%a} {day.day} {day:%b %Y}"
    order = "best first" if view.order != "time" else "in time order"
    body += (
        f"<p class=meta>{len(groups)} session{'s' if len(groups) != 1 else ''}, {hits} hit"
        f"{'s' if hits != 1 else ''}, {order}{' · only ' + _e(scope) if scope else ''}{asked}. "
        "Marked turns matched, their matching words highlighted; the others are the conversation around "
        "them.</p>"
    )
    other = "time" if view.order != "time" else "best"
    body += (
        f'<nav class=order>Order: <strong>{order}</strong> <a rel=alternate href="{_url("/search", **view.params(order=None if other == "best" else other))}">'
        f"{'in time order' if other == 'time' else 'best first'}</a></nav>"
    )
    if not groups:
        body += "<div class=problem><p>No evidence found. Try other words.</p></div>"
    for group in groups:
        first = group[0]
        turns = [t for b in group for t in b.turns]
        matched = [t.turn for t in turns if t.matched]
        page_from = (min(matched or [first.first_turn]) // SESSION_PAGE) * SESSION_PAGE
        link = _url(session_path(first.session_id), **{"from": page_from or None, "hit": matched or None})
        anchor = f"#t{matched[0]}" if matched else ""
        derived = titles.get(first.session_id) if not first.title else None
        title = _title(first.title or derived, derived is not None, first.session_id)
        when = _dates(min(t.timestamp for t in turns), max(t.timestamp for t in turns), view.tz)
        body += (
            f'<section class=session data-session="{_e(first.session_id)}">'
            f'<h2><a href="{link}{anchor}">{title}</a></h2>'
            f"<div class=meta>{_meta(first.source, first.project, when, f'session {_e(first.session_id)}')}"
            "</div><ol class=turns>"
        )
        for i, block in enumerate(group):
            if i:
                body += "<li class=gap>⋮</li>"
            for t in block.turns:
                limit = HIT_CHARS if t.matched else CONTEXT_CHARS
                body += _turn(t, hit=t.matched, limit=limit, tz=view.tz, terms=block.terms)
        body += "</ol></section>"
    return _page(f"{question}", body, view, user=user)


def session_page(
    user: str,
    info: refind.SessionSummary,
    turns: Sequence[refind.Hit],
    *,
    turn_from: int,
    more: bool,
    hits: Sequence[int],
    view: View | None = None,
    corrections: Corrections | None = None,
) -> str:
    """One session in full, :data:`SESSION_PAGE` turns a page; the turns in ``hits`` marked. With
    ``corrections``, each turn has a form to pin it as a standing fact (or, when marked, its mark and a form
    to take it off)."""
    view = view or View()
    marked = set(hits)
    when = _dates(info.first, info.last, view.tz)
    body = (
        f"<h1>{_title(info.title, info.title_derived, info.session_id)}</h1><p class=meta>"
        f"{_meta(info.source, info.project, when, f'{int(info.messages)} messages', f'session {_e(info.session_id)}')}</p>"
    )
    if turns:
        body += (
            f"<p class=meta>Turns {int(turns[0].turn)}–{int(turns[-1].turn)}"
            f"{' (marked: the search hits)' if marked & {t.turn for t in turns} else ''}.</p>"
        )
    path = session_path(info.session_id)
    here = path + (f"?from={turn_from}" if turn_from else "")

    def marking(t: refind.Hit) -> str:
        if corrections is None:
            return ""
        mark = corrections.marks.get(t.id)
        if mark is None:
            return _mark_form("pin", t.id, "Pin", corrections, f"{here}#t{int(t.turn)}")
        return f"<span class='badge {mark}'>{mark}</span>" + _mark_form(
            "unpin", t.id, "Unpin" if mark == "pinned" else "Unhide", corrections, f"{here}#t{int(t.turn)}"
        )

    body += (
        "<ol class=turns>"
        + "".join(_turn(t, hit=t.turn in marked, limit=None, tz=view.tz, marking=marking(t)) for t in turns)
        + "</ol>"
    )
    keep = sorted(marked) or None
    previous = (
        _url(path, **{"from": max(0, turn_from - SESSION_PAGE) or None, "hit": keep})
        if turn_from > 0
        else None
    )
    following = _url(path, **{"from": int(turns[-1].turn) + 1, "hit": keep}) if more and turns else None
    body += _pager(previous, following)
    return _page(info.title or info.session_id, body, view, user=user)


def _anchor(message_id: str) -> str:
    """The HTML id of a message's row on the About you page (percent-encoded: any id makes a valid one)."""
    return "m-" + quote(message_id, safe="")


def about_page(
    user: str,
    facts: Sequence[refind.StandingFact],
    hidden: Sequence[refind.MarkedMessage],
    *,
    view: View,
    corrections: Corrections | None,
    notice: str = "",
) -> str:
    """What ``user`` said that stands (:meth:`refind.Memory.profile`): each standing instruction, preference
    and lasting fact with its kind, sentence, date and session, current or superseded (by which), pinned or
    not; then the messages they hid. With ``corrections``, each has the forms to pin it (as a kind), hide it
    or take its mark off."""
    body = f"<h1>About you <span class=meta>({_e(user)})</span></h1>"
    body += (
        "<p class=meta>What you said that stands: instructions, preferences and lasting facts, read from your "
        "own messages when they were written, newest first. Searches offer them beside the evidence. Pin a "
        "message to make it stand whatever the rule reads in it (also from a session's page); hide one that "
        "is wrong or no longer holds. Corrections are kept in the index: re-imports keep them.</p>"
    )
    if notice:
        body += f"<p class=notice role=status>{_e(notice)}</p>"
    if corrections is None:
        body += "<p class=meta>This page was started without a way to write the index: it lists only.</p>"
    dates = {f.message_id: f for f in facts}
    if not facts:
        body += "<p>Nothing stands yet.</p>"
    else:
        body += (
            "<table class=facts><thead><tr><th>date</th><th>kind</th><th>what</th><th>where</th>"
            + ("<th>correct</th>" if corrections else "")
            + "</tr></thead><tbody>"
        )
        for f in facts:
            kind = _e(f.kind) + (f" <span class=meta>({_e(f.domain)})</span>" if f.domain else "")
            if f.pinned:
                kind += "<span class=badge>pinned</span>"
            what = _e(f.sentence)
            if not f.current and f.superseded_by:
                later = dates.get(f.superseded_by)
                when = f" of {_e(refind.format_date(later.timestamp, 'day', tz=view.tz))}" if later else ""
                what += (
                    f' <span class="badge superseded">superseded by '
                    f'<a href="#{_anchor(f.superseded_by)}">a later one{when}</a></span>'
                )
            link = _url(
                session_path(f.session_id),
                **{"from": (f.turn // SESSION_PAGE) * SESSION_PAGE or None, "hit": f.turn},
            )
            where = f'<a href="{link}#t{int(f.turn)}">session {_e(f.session_id)}, turn {int(f.turn)}</a>'
            row = (
                f'<tr id="{_anchor(f.message_id)}" data-message="{_e(f.message_id)}"'
                f"{' class=superseded' if not f.current else ''}>"
                f"<td class=when>{_e(refind.format_date(f.timestamp, 'day', tz=view.tz))}</td>"
                f"<td>{kind}</td><td class=what>{what}</td><td>{where}</td>"
            )
            if corrections is not None:
                back = f"/about#{_anchor(f.message_id)}"
                forms = _mark_form("pin", f.message_id, "Pin", corrections, back, kind=f.kind)
                forms += _mark_form("hide", f.message_id, "Hide", corrections, "/about")
                if f.pinned:
                    forms += _mark_form("unpin", f.message_id, "Unpin", corrections, back)
                row += f"<td>{forms}</td>"
            body += row + "</tr>"
        body += "</tbody></table>"
    if hidden:
        body += (
            "<h2>Hidden</h2><p class=meta>These never stand: not listed above, never beside a search's "
            "evidence. Searches still find them.</p><table class=facts><thead><tr><th>date</th><th>what</th>"
            "<th>where</th>" + ("<th>correct</th>" if corrections else "") + "</tr></thead><tbody>"
        )
        for m in hidden:
            link = _url(
                session_path(m.session_id),
                **{"from": (m.turn // SESSION_PAGE) * SESSION_PAGE or None, "hit": m.turn},
            )
            row = (
                f'<tr id="{_anchor(m.message_id)}" data-message="{_e(m.message_id)}" class=hidden>'
                f"<td class=when>{_e(refind.format_date(m.timestamp, 'day', tz=view.tz))}</td>"
                f"<td class=what>{_e(m.sentence)}</td>"
                f'<td><a href="{link}#t{int(m.turn)}">session {_e(m.session_id)}, turn {int(m.turn)}</a></td>'
            )
            if corrections is not None:
                row += f"<td>{_mark_form('unpin', m.message_id, 'Unhide', corrections, '/about')}</td>"
            body += row + "</tr>"
        body += "</tbody></table>"
    return _page("About you", body, view, user=user)
