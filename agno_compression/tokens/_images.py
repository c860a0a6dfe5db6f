"""What one image in a prompt costs in input tokens, by the documented rule of the provider the counter's model
belongs to: from the image's size where its own bytes give it (an agno ``Image``'s ``content``, a base64 ``data:``
URL; Pillow reads the header when it is installed, ``pip install 'agno-compression[images]'``), else the most that
provider bills for one image. Not below what the provider counts (Gemini, which has no most, aside where an image of
unknown size is larger than a Full HD screenshot), so a fold decided on the count holds the budget; no file or network
access.

- Anthropic (docs.anthropic.com/en/docs/build-with-claude/vision, "Calculate image costs"): an image whose long edge
  is over 1568 px, or that would cost over about 1,600 tokens, is scaled down first, keeping its aspect ratio; it
  costs width x height / 750 tokens. ``detail`` does not apply.
- OpenAI (platform.openai.com/docs/guides/images-vision, "Calculating costs"): GPT-4o, GPT-4 Turbo, GPT-4.5 and
  o1/o3 scale an image to fit 2048 x 2048, then its short side to 768 px, and bill 85 + 170 tokens per 512 px tile
  (GPT-4o mini: 2,833 + 5,667), 85 at ``low`` detail. GPT-4.1, its mini and nano, GPT-5 mini and nano and o4-mini
  bill 32 px patches, at most 1,536, times a multiplier per model. Any other model (GPT-5 and later among them) is
  counted at the most of these rules, with patches at 1.2.
- Gemini (ai.google.dev/gemini-api/docs/tokens, "Multimodal tokens"): 258 tokens for an image with both sides at most
  384 px, else 258 per 768 x 768 tile.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import warnings
from math import ceil
from typing import Any

ANTHROPIC_MAX = 1_600
"""Anthropic's most for one image (larger ones are scaled down first)."""
OTHER_PATCH_MULTIPLIER = 1.2
"""Patch multiplier a model of no known rule is counted at: a margin over the full-size models' 1.0 (newer models'
images have been reported billed at 1.2 x their patches)."""
MAX_IMAGE_TOKENS = 1_844
"""An image of unknown size on a model of no known rule: 1,536 patches x 1.2 (Anthropic's most is 1,600, GPT-4o's
1,445)."""
LOW_DETAIL = 85

_PATCH_MODELS = {
    **{"gpt-4.1-mini": 1.62, "gpt-4.1-nano": 2.46, "gpt-5-mini": 1.62, "gpt-5-nano": 2.46, "o4-mini": 1.72},
    "gpt-4.1": 1.0,  # after its mini and nano: the first prefix that matches counts
}
_TILE_MODELS = re.compile(r"^(?:chatgpt-4o|gpt-4o|gpt-4\.5|gpt-4-turbo|o1|o3)(?![\w.-]*(?:mini|nano))")


def image_size(data: Any) -> tuple[int, int] | None:
    """``(width, height)`` from an image's bytes or base64 text (a ``data:`` URL too), or ``None``: not image data,
    or Pillow not installed."""
    if isinstance(data, str):
        text = data.split(",", 1)[1] if data.startswith("data:") and "," in data else data
        try:
            data = base64.b64decode(text[:200_000], validate=False)  # a header lies in the first bytes
        except (binascii.Error, ValueError):
            return None
    if not isinstance(data, bytes | bytearray) or not data:
        return None
    try:
        from PIL import Image  # optional: the ``images`` extra
    except ImportError:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a decompression-bomb warning: only the header is read
            with Image.open(io.BytesIO(bytes(data))) as image:
                width, height = image.size
    except Exception:  # any undecodable header means an unknown size
        return None
    return (width, height) if width > 0 and height > 0 else None


def image_tokens(model: str | None, size: tuple[int, int] | None, detail: str | None = None) -> int:
    """Input tokens of one image of ``size`` (``None``: unknown) sent to ``model`` at ``detail``."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    if "claude" in name:
        return _anthropic(*size) if size else ANTHROPIC_MAX
    if "gemini" in name:  # no most: an unknown size counts as a 1920 x 1080 screenshot at most (6 tiles, 1,548)
        return _gemini(*size) if size else ANTHROPIC_MAX
    if name.startswith("gpt-4o-mini"):
        return 2_833 if detail == "low" else _tiles(*size, 2_833, 5_667) if size else _tiles(768, 2048, 2_833, 5_667)
    if multiplier := next((m for prefix, m in _PATCH_MODELS.items() if name.startswith(prefix)), None):
        return ceil(_patches(*size) * multiplier) if size else ceil(1_536 * multiplier)
    if _TILE_MODELS.match(name):
        return LOW_DETAIL if detail == "low" else _tiles(*size) if size else _tiles(768, 2048)
    if size is None:
        return MAX_IMAGE_TOKENS
    patches = ceil(_patches(*size) * OTHER_PATCH_MULTIPLIER)
    return max(_anthropic(*size), _tiles(*size), _gemini(*size), patches)  # no known rule: the most of them


def _anthropic(width: int, height: int) -> int:
    scale = min(1.0, 1568 / max(width, height), (ANTHROPIC_MAX * 750 / (width * height)) ** 0.5)
    return max(1, min(ANTHROPIC_MAX, ceil(int(width * scale) * int(height * scale) / 750)))


def _tiles(width: int, height: int, base: int = LOW_DETAIL, per_tile: int = 170) -> int:
    fit = min(1.0, 2048 / max(width, height))
    short = min(1.0, 768 / (min(width, height) * fit))
    return base + per_tile * ceil(width * fit * short / 512) * ceil(height * fit * short / 512)


def _patches(width: int, height: int) -> int:
    patches = ceil(width / 32) * ceil(height / 32)
    if patches <= 1_536:
        return patches
    scale = (1_536 * 32 * 32 / (width * height)) ** 0.5
    return min(1_536, ceil(width * scale / 32) * ceil(height * scale / 32))


def _gemini(width: int, height: int) -> int:
    return 258 if width <= 384 and height <= 384 else 258 * ceil(width / 768) * ceil(height / 768)
