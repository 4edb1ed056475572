"""Images on the wire: a message's images reach the real local server as image parts in
both wire formats (user turns and tool results), as notes for a model without vision, and
downscaled to each provider's limit."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from PIL import Image

from fencecall.images import (
    ANTHROPIC_SIDE,
    KEPT_SIDE,
    anthropic_tokens,
    keep,
    media_type,
    openai_tokens,
)
from fencecall.message import ImageRef, Message, NativeCallRecord, ReplyRecord
from fencecall.providers._anthropic_provider import AnthropicProvider
from fencecall.providers._openai_provider import OpenAIProvider
from fencecall.providers.base import ChatRequest

from ..fakeserver import FakeModelServer, Reply


def png(width: int, height: int, color: str = "red") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


def size_of(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def _sent(kind: str, request: ChatRequest) -> dict[str, Any]:
    with FakeModelServer([Reply("ok")]) as server:
        if kind == "openai":
            provider: OpenAIProvider | AnthropicProvider = OpenAIProvider(
                api_key="k", base_url=server.openai_url, max_retries=0)
        else:
            provider = AnthropicProvider(api_key="k", base_url=server.base_url, max_retries=0)
        list(provider.stream(request))
    [served] = server.requests
    return served.body


def _image(tmp_path: Path, width: int = 40, height: int = 30) -> ImageRef:
    return keep(png(width, height), tmp_path / "images", "shot.png")


def test_a_user_image_is_an_image_part_in_the_openai_format(tmp_path: Path) -> None:
    image = _image(tmp_path)
    body = _sent("openai", ChatRequest("m", "sys", (Message("user", "what is this?",
                                                            images=(image,)),)))
    [text, part] = body["messages"][1]["content"]
    assert text == {"type": "text", "text": "what is this?"}
    prefix = "data:image/png;base64,"
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith(prefix)
    sent = base64.b64decode(part["image_url"]["url"][len(prefix):])
    assert sent == Path(image.path).read_bytes() and size_of(sent) == (40, 30)


def test_a_user_image_is_an_image_block_in_the_anthropic_format(tmp_path: Path) -> None:
    image = _image(tmp_path)
    body = _sent("anthropic", ChatRequest("m", "sys", (Message("user", "what is this?",
                                                               images=(image,)),)))
    [text, block] = body["messages"][0]["content"]
    assert text == {"type": "text", "text": "what is this?"}
    assert block["type"] == "image"
    assert block["source"]["type"] == "base64" and block["source"]["media_type"] == "image/png"
    assert base64.b64decode(block["source"]["data"]) == Path(image.path).read_bytes()


CALL = NativeCallRecord("call_1", "read", {"path": "shot.png"})
ASKED = Message("user", "look at shot.png")
CALLED = Message("assistant", "", reply=ReplyRecord("m", "p", native_calls=(CALL,)))


def _result(image: ImageRef) -> Message:
    return Message("system", "shot.png: an image", call_id="call_1", tool="read",
                   images=(image,))


def test_a_native_results_image_follows_the_tool_message_for_openai(tmp_path: Path) -> None:
    request = ChatRequest("m", "sys", (ASKED, CALLED, _result(_image(tmp_path))))
    messages = _sent("openai", request)["messages"]
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1",
                           "content": "shot.png: an image"}
    after = messages[4]
    assert after["role"] == "user"
    assert [part["type"] for part in after["content"]] == ["text", "image_url"]


def test_a_native_results_image_is_inside_the_tool_result_for_anthropic(
        tmp_path: Path) -> None:
    request = ChatRequest("m", "sys", (ASKED, CALLED, _result(_image(tmp_path))))
    [result] = _sent("anthropic", request)["messages"][2]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "call_1"
    assert [block["type"] for block in result["content"]] == ["text", "image"]


def test_a_model_without_vision_gets_a_note_in_both_formats(tmp_path: Path) -> None:
    image = _image(tmp_path, 64, 48)
    messages = (Message("user", "what is this?", images=(image,)),)
    note = "an image of 64×48 (shot.png); this model takes no images"  # noqa: RUF001
    openai_body = _sent("openai", ChatRequest("m", "sys", messages, vision=False))
    assert isinstance(openai_body["messages"][1]["content"], str)
    assert note in openai_body["messages"][1]["content"]
    anthropic_body = _sent("anthropic", ChatRequest("m", "sys", messages, vision=False))
    [block] = anthropic_body["messages"][0]["content"]
    assert block["type"] == "text" and note in block["text"]


def test_a_large_image_is_kept_at_most_the_largest_limit_and_sent_at_the_providers(
        tmp_path: Path) -> None:
    image = keep(png(4000, 1000), tmp_path, "big.png")
    assert (image.width, image.height) == (KEPT_SIDE, 512)
    assert size_of(Path(image.path).read_bytes()) == (KEPT_SIDE, 512)
    body = _sent("anthropic", ChatRequest("m", "sys", (Message("user", "x", images=(image,)),)))
    data = base64.b64decode(body["messages"][0]["content"][1]["source"]["data"])
    assert size_of(data) == (ANTHROPIC_SIDE, 392)


def test_the_image_types_are_told_by_their_bytes() -> None:
    assert media_type(png(2, 2)) == "image/png"
    assert media_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert media_type(b"GIF89a...") == "image/gif"
    assert media_type(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"
    assert media_type(b"hello, this is text") is None


def test_images_are_counted_by_the_providers_rules(tmp_path: Path) -> None:
    image = keep(png(1000, 1000), tmp_path, "square.png")
    assert anthropic_tokens(image) == 1334  # ceil(1000 * 1000 / 750)
    assert openai_tokens(image) == 85 + 170 * 4  # 768 x 768: 2 x 2 tiles


def test_an_image_whose_kept_file_is_gone_is_a_note_not_a_failed_request(
        tmp_path: Path) -> None:
    image = _image(tmp_path)
    Path(image.path).unlink()
    messages = (Message("user", "what is this?", images=(image,)),)
    for kind in ("openai", "anthropic"):
        body = _sent(kind, ChatRequest("m", "sys", messages))
        assert f"its file {image.path} is gone" in str(body["messages"])
        assert "base64" not in str(body["messages"])
