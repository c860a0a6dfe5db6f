"""The session viewer: a stored session as a timeline (``_timeline``), its SVG chart (``_chart``), its self-contained
page (``_page``, ``_report``), the HTTP rules every viewer follows (``_http``) and the read-only server
(``agno-compression serve``, ``_serve``).

Nothing here is imported by ``import agno_compression``'s runtime path beyond this file; the pages are built only
when a command or a server asks for them.
"""
