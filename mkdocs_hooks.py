"""mkdocs hook: the site resolves links by repository path, so a link that works on GitHub works on the site.

The pages of ``docs/`` keep their site URLs (``docs/design.md`` is served at ``design/``) but are known to mkdocs
by their path in the repository; a file outside ``docs/`` that a page links to (``bench/RESULTS.md``,
``cookbook/team.py``, ``CHANGELOG.md``) is published at its repository path, and the pages among them are followed
in turn. ``mkdocs.yml``'s nav names pages by repository path too. A link to a file that does not exist is left
alone, so ``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)[^)]*\)")  # as tests/unit/test_docs.py reads links
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
SCHEME = re.compile(r"[a-z][a-z0-9+.-]*:")


def relative_targets(text: str) -> list[str]:
    """Paths of the relative links of a Markdown text (anchors dropped; code blocks hold no links)."""
    targets = (t.partition("#")[0] for t in LINK.findall(FENCE.sub("", text)) if not SCHEME.match(t))
    return [t for t in targets if t]


def on_files(files: Files, config: Any) -> Files:
    root = Path(config.config_file_path).resolve().parent
    docs = Path(config.docs_dir).resolve()
    prefix = docs.relative_to(root).as_posix()
    out = Files([])
    for file in files:
        if file.src_dir and Path(file.src_dir).resolve() == docs:
            file = File(
                f"{prefix}/{file.src_uri}",
                str(root),
                config.site_dir,
                config.use_directory_urls,
                dest_uri=file.dest_uri,
                inclusion=file.inclusion,
            )
        out.append(file)
    pages = [f for f in out if f.is_documentation_page() and f.src_uri.startswith(f"{prefix}/")]
    while pages:
        page = pages.pop()
        for target in relative_targets(Path(page.abs_src_path or "").read_text(encoding="utf-8")):
            uri = posixpath.normpath(posixpath.join(posixpath.dirname(page.src_uri), target))
            if uri.startswith("../") or out.get_file_from_path(uri) or not (root / uri).is_file():
                continue
            added = File(uri, str(root), config.site_dir, config.use_directory_urls)
            out.append(added)
            if added.is_documentation_page():
                pages.append(added)
    return out
