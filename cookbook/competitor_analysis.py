"""The seed scenario: a competitor analysis that searches the web and reads many long pages.

Offline (the default) the search tool reads canned result pages built into this file; with
GOOGLE_API_KEY set, Gemini decides what to search and read (the pages stay canned, so the run
is repeatable). Long pages make the context grow fast; folds keep it under budget and the
database keeps every page in full.

    python cookbook/competitor_analysis.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import answer_of, database_path, pick_model, print_answer, print_folds

from agno_compression import CompressionManager, full_messages
from agno_compression.testing import Reply, ScriptInfo, ToolCall

COMPANIES = {
    "Northwind AI": ("2019", "Seattle", "$410M", "enterprise search", "Northwind Atlas 3"),
    "Contoso Labs": ("2017", "Berlin", "$1.2B", "code assistants", "Contoso Pilot"),
    "Fabrikam Models": ("2021", "Toronto", "$95M", "speech models", "Fabrikam Echo 2"),
    "Tailspin Cognition": ("2018", "Austin", "$640M", "agent platforms", "Tailspin Orchestrate"),
}


def _page(name: str) -> str:
    founded, city, funding, focus, product = COMPANIES[name]
    intro = (
        f"{name} (founded {founded}, headquartered in {city}) builds {focus}. "
        f"Total funding: {funding}. Flagship product: {product}. "
    )
    filler = " ".join(
        f"Paragraph {i}: analysts discuss {name}'s roadmap, pricing tiers and partner ecosystem "
        f"in {focus}, comparing benchmark results quarter over quarter."
        for i in range(40)
    )
    return intro + filler


def web_search(query: str) -> str:
    """Search the web; returns result titles and URLs."""
    hits = [n for n in COMPANIES if any(w.lower() in n.lower() for w in query.split())] or list(COMPANIES)
    return "\n".join(f"{n} — company profile — https://example.com/{n.split()[0].lower()}" for n in hits)


def open_page(url: str) -> str:
    """Open a web page and return its text."""
    name = next((n for n in COMPANIES if n.split()[0].lower() in url), None)
    return _page(name) if name else f"404: {url} not found"


def script(messages: list[Message], info: ScriptInfo) -> Reply:
    """Offline stand-in: search once, then read every company's page, then compare."""
    names = list(COMPANIES)
    if info.call_index == 0:
        return Reply(text="Searching for competitors.", tool_calls=[ToolCall("web_search", {"query": "AI companies"})])
    if info.call_index <= len(names):
        name = names[info.call_index - 1]
        url = f"https://example.com/{name.split()[0].lower()}"
        return Reply(text=f"Reading about {name}.", tool_calls=[ToolCall("open_page", {"url": url})])
    table = "; ".join(f"{n}: {v[2]} raised, {v[4]}" for n, v in COMPANIES.items())
    return Reply(text=f"Competitor summary — {table}.")


def main() -> None:
    db_file = database_path("competitor_analysis")
    manager = CompressionManager(compress_at_tokens=4_000)
    agent = manager.attach(
        Agent(
            model=pick_model(script),
            tools=[web_search, open_page],
            db=SqliteDb(db_file=str(db_file)),
            session_id="competitors",
            system_message="You are a market analyst. Search, read the pages, then compare the companies.",
            telemetry=False,
        )
    )
    result = agent.run("Compare the main AI competitors: funding, focus and flagship product.")
    print_answer("answer", answer_of(result))
    pages = [m for m in full_messages(agent.db, "competitors") if m.tool_name == "open_page"]
    print(f"{len(pages)} pages stored in full ({sum(len(str(p.content)) for p in pages):,} chars)")
    print_folds(manager, db_file, "competitors")


if __name__ == "__main__":
    main()
