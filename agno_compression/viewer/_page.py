"""The session page: one self-contained HTML file (inline CSS and SVG, no script, no external font or file).

Everything read from the database (messages, summaries, ids, names) is untrusted text and goes through ``e``
(``_visible.html_text``): control and bidi characters shown as marks, then escaped; where it is shown, the
stylesheet isolates its direction. The page's Content-Security-Policy forbids scripts and every external load as a
second guard.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from importlib.resources import files

from agno.models.message import Message

from .._keeping._ledger import SECTION, section_lines
from .._messages import message_text, one_line
from .._summarizers import is_masked
from .._visible import html_text as e
from .._visible import visible
from ..tokens import TokenCounter
from ._chart import lane_chart
from ._http import PAGE_CSP
from ._timeline import REASONS, Fold, Lane, Timeline

FULL_TEXT_LIMIT = 200_000
"""Characters of one original message embedded in the page (``agno-compression export`` has them all)."""
PEEK_LINES = 3


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 fold``, ``2 folds`` (``words`` for an irregular plural)."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def shell(title: str, body: str) -> str:
    """A whole page: the stylesheet inline, the policy that forbids scripts and external loads."""
    css = files("agno_compression.viewer").joinpath("page.css").read_text(encoding="utf-8")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{PAGE_CSP}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{css}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def _tile(label: str, value: str, sub: str, name: str) -> str:
    return (
        f'<div class="tile" data-total="{e(name)}"><div class="label">{e(label)}</div>'
        f'<div class="value">{e(value)}</div><div class="sub">{sub}</div></div>'
    )


def _tiles(t: Timeline) -> str:
    reasons = {r: sum(1 for f in t.folds if f.reason == r) for r in REASONS}
    why = " · ".join(f"{n} {REASONS[r]}" for r, n in reasons.items() if n) or "none"
    runs = sum(len(lane.runs) for lane in t.lanes)
    members = sum(len(lane.calls) for lane in t.lanes if lane.member)
    calls_sub = plural(runs, "run") + (f" · {members:,} by team members" if members else "")
    basis = "as the providers reported it" if t.cost_reported else "estimated"
    rates = "; ".join(f"{p.provider} {p.family}: reads {p.read_rate:g}×, writes {p.write_rate:g}×" for p in t.prices)
    return (
        '<section class="tiles" aria-label="Totals">'
        + "".join(
            [
                _tile("Model calls", f"{t.calls:,}", e(calls_sub), "calls"),
                _tile("Folds", f"{t.stats.folds:,}", e(why), "folds"),
                _tile(
                    "Tokens saved",
                    f"{t.stats.tokens_saved:,}",
                    "by the folds (before − after), as <code>inspect</code> counts",
                    "saved",
                ),
                _tile(
                    "Prompt tokens sent",
                    f"{t.sent:,}",
                    e(f"of {t.without:,} without compression ({_share(t.sent, t.without)})"),
                    "sent",
                ),
                _tile(
                    "Input billed",
                    f"{t.cost_with:,.0f}",
                    e(
                        f"of {t.cost_without:,.0f} without compression ({_share(t.cost_with, t.cost_without)}), "
                        f"{basis}; {rates}"
                    ),
                    "cost",
                ),
                _tile(
                    "Messages folded",
                    f"{t.stats.folded_messages:,}",
                    "stored in full in the database",
                    "folded",
                ),
            ]
        )
        + "</section>"
    )


def _billed_note(t: Timeline) -> str:
    """One line on why input billed stays near (or above) uncompressed while far fewer tokens were sent."""
    if not t.cost_without or not t.without or t.cost_with / t.cost_without - t.sent / t.without < 0.25:
        return ""
    return (
        '<p class="note billed-note">Input billed is not much lower although fewer tokens were sent: without '
        "compression the prompt cache already bills most of each prompt at its read rate, and each fold writes its "
        "rewritten part to the cache again. A short run gains little; a long one gains with every later call.</p>"
    )


def _legend(t: Timeline) -> str:
    reasons = {f.reason for f in t.folds}
    keys = [
        '<span><i class="key"></i>prompt tokens sent</span>',
        '<span><i class="key without"></i>without compression</span>',
    ]
    if t.budget:
        keys.append(f'<span><i class="key budget"></i>budget {t.budget:,}</span>')
    for reason in ("budget", "early", "overflow", "tight", "agent", "request", "unknown"):
        if reason in reasons:
            keys.append(f'<span><i class="key fold {reason}"></i>fold: {e(REASONS[reason])}</span>')
    if t.searches:
        keys.append('<span><i class="key search"></i>searched the folded history</span>')
    return '<div class="legend">' + "".join(keys) + "</div>"


def _runs_table(lane: Lane) -> str:
    rows = []
    for run in lane.runs:
        calls = (
            f"{run.calls[0].number}–{run.calls[-1].number}"
            if len(run.calls) > 1
            else (str(run.calls[0].number) if run.calls else "-")
        )
        folds = [f for f in lane.folds if f.run == run.number]
        links = ", ".join(f'<a href="#fold-{f.number}">{f.number}</a>' for f in folds) or "-"
        rows.append(
            f'<tr data-run="{run.number}"><td class="num">{run.number}</td><td class="text">'
            f'{e(one_line(run.request, 140))}</td><td class="num">{calls}</td><td>{links}</td>'
            f"<td>{e(run.status.lower())}{' · history' if run.history else ''}</td></tr>"
        )
    return (
        '<table class="runs"><thead><tr><th class="num">run</th><th>request</th><th class="num">calls</th>'
        f"<th>folds</th><th>status</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _lane(t: Timeline, index: int, lane: Lane) -> str:
    role = "team member" if lane.member else ("team leader" if lane.kind == "team" else "agent")
    searches = [s.call.number for s in t.searches if s.lane == index]
    label = f"{lane.name} ({role})"
    peak = max((c.without for c in lane.calls), default=0)
    budget = t.budget if t.budget and (not lane.member or peak >= 0.4 * t.budget) else None  # a small lane's scale
    chart = lane_chart(lane, index, budget, height=340 if not lane.member else 220, label=label, searches=searches)
    facts = f"{plural(len(lane.runs), 'run')} · {plural(len(lane.calls), 'model call')} · "
    facts += plural(len(lane.folds), "fold")
    if t.budget and budget is None:
        facts += f" · largest prompt {peak:,} tokens, well under the budget of {t.budget:,}"
    runs = _runs_table(lane)
    if lane.member:
        runs = f"<details><summary>Runs delegated to {e(lane.name)}</summary>{runs}</details>"
    return (
        f'<div class="lane" id="lane-{index}" data-lane="{index}"><div class="lane-head"><h3>{e(label)}</h3>'
        f'<span class="muted">{e(facts)}</span></div>{chart}{runs}</div>'
    )


def _strategy(strategy: str) -> str:
    name = strategy
    for tag in ("request:", "agent:", "overflow:", "tight:"):  # the reason column says why
        name = name.removeprefix(tag)
    if "->" in name:
        first, fallback = name.split("->", 1)
        return f'{e(first)} → {e(fallback)} <span class="muted">(fallback)</span>'
    return e(name)


def _peek(text: str) -> tuple[str, bool]:
    """The first lines of ``text`` (each on one line, cut between words) and whether that is all of it. Only a
    newline ends a line: a carriage return or a separator is shown as its mark, as in the full text."""
    marked = visible(text)
    lines = [line for line in marked.split("\n") if line.strip()]
    shown = [one_line(line, 160) for line in lines[:PEEK_LINES]]
    whole = marked == text and len(lines) <= PEEK_LINES and shown == [" ".join(x.split()) for x in lines]
    return "\n".join(shown), whole


def _original(m: Message, counter: TokenCounter) -> str:
    text = message_text(m, use_compressed_content=False)
    if m.role == "tool":
        who = f"tool result · {m.tool_name or 'tool'}"
    elif m.role == "assistant" and m.tool_calls:
        names = ", ".join(str(c.get("function", {}).get("name", "")) for c in m.tool_calls if isinstance(c, dict))
        who = f"assistant · calls {names}"
    else:
        who = m.role
    peek, whole = _peek(text)
    size = f"{len(text):,} characters · {counter.count_text(text):,} tokens"  # both of the stored original
    sent = m.compressed_content
    if m.role == "tool" and sent is not None and sent != m.content:  # what the model saw before the fold
        how = "masked" if is_masked(m) else "shortened"
        size += f" · {how} in context to {len(sent):,} characters · {counter.count_message(m):,} tokens"
    full = ""
    if not whole:
        cut = text[:FULL_TEXT_LIMIT]
        more = f"\n… {len(text) - len(cut):,} more characters (agno-compression export has them)" if cut != text else ""
        full = f"<details><summary>Full text ({len(text):,} characters)</summary><pre>{e(cut + more)}</pre></details>"
    return (
        f'<li data-message="{e(m.id)}"><div class="who"><strong>{e(who)}</strong>'
        f'<span class="muted">{e(size)}</span></div><pre class="peek">{e(peek) or "(empty)"}</pre>{full}</li>'
    )


def _fold(t: Timeline, fold: Fold, counter: TokenCounter) -> str:
    r = fold.record
    lane = t.lanes[fold.lane] if fold.lane is not None else None
    between = r.run_id is None and fold.lane is not None  # made between runs (on request): no run of its own
    run = f"{fold.run}" if fold.run is not None else "not stored"
    if between:
        run = f"after {fold.after}" if fold.after is not None else f"before {fold.run or 1}"
    said = f"run {run}" if between else f"run {fold.run or '-'}"
    if lane is not None and lane.member:
        run += f' <span class="muted">{e(lane.name)}</span>'
    call = "-" if fold.call is None else (f"~{fold.call}" if fold.estimated else str(fold.call))
    where = "not placed" if fold.call is None else f"before call {fold.call}"
    of = f" of {lane.name}" if lane is not None and lane.member else ""
    label = (
        f"Fold {fold.number}: {said}{of}, "
        f"{where}, {REASONS[fold.reason]}, {r.strategy}, {r.tokens_before:,} to {r.tokens_after:,} tokens, "
        f"{plural(len(r.folded_ids), 'message')} folded"
    )
    summary = r.summary or ""
    ledger = section_lines(summary, SECTION)
    ledger_html = (
        '<div class="ledger-title">The ledger: the working state the summary carries</div><div class="ledger">'
        + "".join(f"<div>{e(line)}</div>" for line in ledger)
        + "</div>"
        if ledger
        else ""
    )
    originals = "".join(_original(m, counter) for m in fold.folded)
    missing = f'<p class="note">{plural(fold.missing, "folded message")} not found in the stored runs.</p>'
    notes = []
    if fold.estimated:
        notes.append("Placed by prompt size: this record predates the call number folds now keep.")
    if between:
        after = f"after run {fold.after}" if fold.after is not None else "before the first run"
        notes.append(
            f"Folded between runs, {after}: the next run loaded this summary in place of the folded messages."
            if fold.call is not None
            else f"Folded between runs, {after}: the session's next run loads this summary in place of the folded "
            "messages."
        )
    elif fold.call is None and fold.run is not None:
        notes.append("The call it came before was not stored (the run ended first).")
    return (
        f'<details class="fold" id="fold-{fold.number}" data-fold="{fold.number}" data-call="{fold.call or ""}" '
        f'data-lane="{"" if fold.lane is None else fold.lane}" data-reason="{fold.reason}">'
        f'<summary aria-label="{e(label)}"><span class="num"><span class="badge {fold.reason}">{fold.number}</span>'
        f'</span><span>{run}</span><span class="num">{call}</span>'
        f'<span><span class="pill {fold.reason}">{e(REASONS[fold.reason])}</span></span>'
        f'<span class="strategy">{_strategy(r.strategy)}</span>'
        f'<span class="num">{r.tokens_before:,} → {r.tokens_after:,}</span><span class="num">{fold.saved:,}</span>'
        f'<span class="num">{len(r.folded_ids):,}</span></summary><div class="body"><div>'
        f"<h3>What the model saw instead</h3>{ledger_html}<pre>{e(summary) or '(no summary text)'}</pre>"
        + "".join(f'<p class="note">{e(n)}</p>' for n in notes)
        + f"</div><div><h3>Folded originals ({plural(len(fold.folded), 'message')})</h3>"
        f'<ul class="originals">{originals}</ul>{missing if fold.missing else ""}</div></div></details>'
    )


def _folds(t: Timeline, counter: TokenCounter) -> str:
    if not t.folds:
        return '<section class="card"><h2>Folds</h2><p class="muted">No fold recorded in this session.</p></section>'
    head = (
        '<div class="head" aria-hidden="true"><span class="num">#</span><span>run</span>'
        '<span class="num">before call</span><span>reason</span><span>strategy</span>'
        '<span class="num">tokens before → after</span><span class="num">saved</span>'
        '<span class="num">folded</span></div>'
    )
    body = "".join(_fold(t, f, counter) for f in t.folds)
    return (
        '<section class="card folds" aria-label="Folds"><h2>Folds</h2>'
        '<p class="note">Open a fold to see the summary and ledger the model was sent in place of the folded '
        f"messages, and those messages as stored.</p>{head}{body}</section>"
    )


def _call_of(t: Timeline, lane: int, run: int, message: Message) -> int | None:
    """The lane number of the call whose tool results ``message`` is (the assistant message before it)."""
    found = next(r for r in t.lanes[lane].runs if r.number == run)
    before = found.messages[: found.messages.index(message)]
    caller = next((m for m in reversed(before) if m.role == "assistant"), None)
    return next((c.number for c in found.calls if c.message is caller), None)


def _shortened(t: Timeline) -> str:
    if not t.shortened:
        return ""
    rows = []
    for s in t.shortened:
        m = s.message
        full, sent = message_text(m, False), m.compressed_content or ""
        lane = f" · {e(t.lanes[s.lane].name)}" if len(t.lanes) > 1 else ""
        rows.append(
            f'<tr><td class="num">{s.run}{lane}</td><td class="num">{_call_of(t, s.lane, s.run, m) or "-"}</td>'
            f"<td>{e(m.tool_name or 'tool')}</td><td>{'masked' if s.masked else 'shortened'}</td>"
            f'<td class="num">{len(full):,} → {len(sent):,}</td>'
            f'<td class="text"><details><summary>What the model saw</summary><pre>{e(sent[:FULL_TEXT_LIMIT])}</pre>'
            "</details></td></tr>"
        )
    return (
        '<section class="card" aria-label="Outputs shortened in context"><h2>Tool outputs shortened in context</h2>'
        '<p class="note">The model saw a shorter text; the database keeps the output in full.</p>'
        '<table><thead><tr><th class="num">run</th><th class="num">result of call</th><th>tool</th><th>how</th>'
        f'<th class="num">characters stored → sent</th><th>sent text</th></tr></thead><tbody>{"".join(rows)}'
        "</tbody></table></section>"
    )


def _searches(t: Timeline) -> str:
    if not t.searches:
        return ""
    rows = []
    for s in t.searches:
        peek, _ = _peek(s.answer)
        rows.append(
            f'<tr data-call="{s.call.number}"><td class="num">{s.call.run}</td><td class="num">{s.call.number}</td>'
            f'<td class="text mono">{e(s.arguments)}</td><td class="text"><pre class="peek">{e(peek)}</pre>'
            f"<details><summary>Whole answer</summary><pre>{e(s.answer[:FULL_TEXT_LIMIT])}</pre></details></td></tr>"
        )
    return (
        '<section class="card" aria-label="Searches of folded history"><h2>Uses of <code>search_folded_history</code>'
        '</h2><table><thead><tr><th class="num">run</th><th class="num">call</th><th>arguments</th><th>answer</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _definitions(t: Timeline) -> str:
    return (
        '<section class="card" aria-label="Definitions"><h2>How these are counted</h2><dl class="defs">'
        "<dt>Without compression</dt><dd>Each call's prompt plus what the folds before it, in the same context, "
        "removed (their tokens before − after; in a later run too when it loads the session's history).</dd>"
        "<dt>Tokens saved</dt><dd>The sum over folds of prompt tokens before − after the fold: the "
        "<code>tokens_saved</code> of <code>agno-compression inspect</code> and <code>stats()</code>.</dd>"
        "<dt>Prompt tokens sent</dt><dd>What the provider reported as each call's prompt: the whole prompt, cache "
        "reads and writes included (Anthropic reports them apart from its <code>input_tokens</code>).</dd>"
        "<dt>Input billed</dt><dd>In input tokens at full price, by each model's provider (its row in "
        "<code>agno_compression.pricing</code>): uncached tokens at 1×, cache reads and writes at the provider's "
        "rates. With compression it is what the providers reported per call, where they reported it; otherwise, "
        "and without compression, it is estimated by the provider's caching rules (without compression: the "
        "best a plain client gets, automatic caching on Anthropic).</dd>"
        "<dt>Fold reasons</dt><dd>Over the budget: the prompt exceeded <code>compress_at_tokens</code>. Early: "
        "under it, folded because the fold pays for the prompt cache it breaks within <code>payback_calls</code>. "
        "Overflow retry: the provider rejected the prompt as too long. No room: the system messages, tool definitions "
        "and the request alone leave too little of the budget to fold into; the run's prompts exceed it and it folds "
        "at most every five model calls. The agent asked: the agent called <code>fold_context</code> to fold before "
        "its next step. On request: folded between runs by <code>fold_session</code> (<code>agno-compression "
        "fold</code>, the viewer's fold route, AgentOS's compact route); the next run's first call loads its "
        "summary.</dd></dl></section>"
    )


def _skipped(notes: Sequence[str]) -> str:
    if not notes:
        return ""
    items = "".join(f"<li>{e(note)}</li>" for note in notes[:20])
    more = f"<li>and {len(notes) - 20} more</li>" if len(notes) > 20 else ""
    return (
        f'<section class="card warn" role="note" aria-label="Skipped records"><h2>{len(notes)} fold record'
        f'{"s" if len(notes) != 1 else ""} skipped</h2><p class="note">Stored rows that do not read are left out; '
        f"the rest of the session is shown.</p><ul>{items}{more}</ul></section>"
    )


def session_page(
    t: Timeline,
    *,
    source: str,
    counter: TokenCounter | None = None,
    back: str | None = None,
    skipped: Sequence[str] = (),
) -> str:
    """The whole page of a session's timeline; ``source`` names the database, ``back`` links a list of sessions,
    ``skipped`` names the stored fold records left out because they did not read."""
    counter = counter or TokenCounter("gpt-4o")
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    nav = f'<a href="{e(back)}">All sessions</a> · ' if back else ""
    main = [lane for lane in t.lanes if not lane.member]
    members = [lane for lane in t.lanes if lane.member]
    charts = "".join(_lane(t, t.lanes.index(lane), lane) for lane in main)
    member_charts = "".join(_lane(t, t.lanes.index(lane), lane) for lane in members)
    body = [
        f'<header><div class="eyebrow">{nav}agno-compression · session report</div>'
        f'<h1>Session <span class="id">{e(t.session_id)}</span></h1>'
        f'<p class="meta">{e(t.owner)} · {e(source)} · generated {generated}</p></header>',
        _skipped(skipped),
        _tiles(t),
        _billed_note(t),
        f'<section class="card" aria-label="Prompt size per model call"><h2>Prompt tokens per model call</h2>'
        f"{_legend(t)}{charts or '<p class=muted>No model call stored.</p>'}</section>",
    ]
    if members:
        body.append(
            '<section class="card" aria-label="Team members"><h2>Team members</h2><p class="note">Each member\'s '
            f"calls, in its own lane (a delegated task is one member run).</p>{member_charts}</section>"
        )
    body += [_folds(t, counter), _shortened(t), _searches(t), _definitions(t)]
    return shell(f"Session {t.session_id} · agno-compression", "\n".join(part for part in body if part))
