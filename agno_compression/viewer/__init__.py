"""The session viewer: a stored session as a timeline (``_timeline``), its SVG chart (``_chart``), its self-contained
page (``_page``, ``_report``), the HTTP rules every viewer follows (``_http``), the routes (``viewer_router``, mounted
in an AgentOS app or served by ``agno-compression serve``, ``_serve``).

``import agno_compression`` loads only ``viewer_router``'s module, which imports FastAPI when it is called.
"""

from ._router import DEFAULT_PREFIX, viewer_router

__all__ = ["DEFAULT_PREFIX", "viewer_router"]
