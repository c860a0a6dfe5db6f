"""An image's prompt tokens by its provider's documented rule, from its size where its bytes give it: the providers'
own examples, and never below any provider's rule where the model is unknown."""

from __future__ import annotations

import base64
import io

import pytest
from agno.media import Image
from agno.models.message import Message
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image as Picture

from agno_compression.tokens import TokenCounter
from agno_compression.tokens._images import ANTHROPIC_MAX, MAX_IMAGE_TOKENS, image_size, image_tokens

SIDES = st.integers(1, 8_000)


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Picture.new("RGB", (width, height)).save(out, "PNG")
    return out.getvalue()


@pytest.mark.parametrize(
    ("model", "size", "tokens"),
    [
        # Anthropic's table (docs.anthropic.com, vision, "Calculate image costs")
        ("claude-sonnet-4-5", (200, 200), 54),
        ("claude-sonnet-4-5", (1000, 1000), 1_334),
        ("claude-sonnet-4-5", (1092, 1092), 1_590),
        ("us.anthropic.claude-opus-4", (4_000, 3_000), 1_598),  # scaled down first: about 1,600 at most
        # OpenAI's examples (platform.openai.com, images and vision, "Calculating costs")
        ("gpt-4o", (1024, 1024), 765),
        ("gpt-4o", (2048, 4096), 1_105),
        ("gpt-4.1", (1024, 1024), 1_024),  # 1,024 patches
        ("gpt-4.1-mini", (1024, 1024), 1_659),  # 1,024 patches x 1.62
        # Gemini (ai.google.dev, tokens, "Multimodal tokens"): 258 up to 384 px, else 258 a 768 px tile
        ("gemini-2.5-flash", (384, 384), 258),
        ("gemini-2.5-pro", (1920, 1080), 1_548),
    ],
)
def test_the_providers_own_examples(model: str, size: tuple[int, int], tokens: int) -> None:
    assert image_tokens(model, size) == tokens


def test_detail_counts_where_the_provider_has_it_and_unknown_sizes_count_at_the_most() -> None:
    assert image_tokens("gpt-4o", (4000, 4000), "low") == 85
    assert image_tokens("claude-haiku-4-5", (1000, 1000), "low") == 1_334, "Anthropic has no low detail"
    assert image_tokens("gpt-4o", None) == 1_445 and image_tokens("claude-sonnet-4-5", None) == ANTHROPIC_MAX
    assert image_tokens("gpt-5.2", None) == image_tokens(None, None) == MAX_IMAGE_TOKENS == 1_844


@given(SIDES, SIDES)
def test_on_an_unknown_model_an_image_counts_no_less_than_any_providers_rule(width: int, height: int) -> None:
    size = (width, height)
    unknown = image_tokens("my-local-model", size)
    assert unknown >= max(image_tokens(m, size) for m in ("claude-sonnet-4-5", "gpt-4o", "gpt-4.1", "gemini-2.5-pro"))
    assert unknown <= MAX_IMAGE_TOKENS or image_tokens("gemini-2.5-pro", size) == unknown, "only Gemini has no most"
    assert image_tokens("claude-sonnet-4-5", size) <= image_tokens("claude-sonnet-4-5", None)
    assert image_tokens("gpt-4o", size) <= image_tokens("gpt-4o", None)


def test_the_size_comes_from_the_images_bytes_or_a_data_url_and_nothing_else_is_read() -> None:
    data = png(1280, 720)
    assert image_size(data) == image_size("data:image/png;base64," + base64.b64encode(data).decode()) == (1280, 720)
    assert image_size(b"not an image") is None and image_size("https://example.com/a.png") is None
    assert image_size(None) is None


def test_a_counter_counts_a_screenshot_by_its_size_on_its_models_provider() -> None:
    plain = Message(role="user", content="what is on the page?")
    shot = Message(role="user", content="what is on the page?", images=[Image(content=png(1280, 720))])
    claude, gpt = TokenCounter("claude-sonnet-4-5"), TokenCounter("gpt-4o")
    assert claude.count_message(shot) - claude.count_message(plain) == 1_229  # 1280 x 720 / 750
    assert gpt.count_message(shot) - gpt.count_message(plain) == 1_105  # 6 tiles at 1365 x 768
    part = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png(200, 200)).decode()},
    }
    assert (
        claude.count_message(Message(role="user", content=[part]))
        - claude.count_message(Message(role="user", content=[]))
        == 54
    )
