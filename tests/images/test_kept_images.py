"""Images are kept in the conversation's folder, logged by reference and restored on
resume, and counted in the token estimate."""

from __future__ import annotations

import json
from pathlib import Path

from fencecall.accounting import Billing, Estimate, Pricing, Spend
from fencecall.agent.conversation import Conversation
from fencecall.images import image_tokens, keep, messages_image_tokens
from fencecall.log_records import from_record, to_record
from fencecall.message import Message
from fencecall.providers.base import ChatRequest, wire_texts

from .test_wire_images import png


def test_an_image_is_logged_by_reference_and_comes_back(tmp_path: Path) -> None:
    image = keep(png(30, 20), tmp_path, "shot.png")
    record = to_record(Message("user", "see", images=(image,)))
    assert record["images"] == [{"path": image.path, "media_type": "image/png", "width": 30,
                                 "height": 20, "size": image.size, "source": "shot.png"}]
    assert "base64" not in json.dumps(record)
    restored = from_record(json.loads(json.dumps(record)))
    assert restored is not None and restored.images == (image,)


def test_a_malformed_image_entry_is_left_out() -> None:
    record = {"op": "message", "role": "user", "content": "see",
              "time": "2026-01-01T00:00:00+00:00",
              "images": [{"path": "x.png", "media_type": "image/png", "width": "wide"}]}
    restored = from_record(record)
    assert restored is not None and restored.images == ()


def test_resume_keeps_the_image_in_the_conversations_folder(tmp_path: Path) -> None:
    elsewhere = keep(png(30, 20), tmp_path / "scratch", "shot.png")
    conversation = Conversation.create(tmp_path / "home", "with-image")
    conversation.append(Message("user", "see", images=(elsewhere,)))
    conversation.close()
    Path(elsewhere.path).unlink()  # the file it came from is gone
    resumed = Conversation.open(tmp_path / "home", "with-image")
    [image] = resumed.messages[0].images
    assert resumed.folder is not None and Path(image.path).parent == resumed.folder / "images"
    assert Path(image.path).read_bytes() == png(30, 20)
    assert (image.width, image.height, image.source) == (30, 20, "shot.png")


def test_images_count_in_the_token_estimate(tmp_path: Path) -> None:
    image = keep(png(1500, 750), tmp_path, "wide.png")
    with_image = Message("user", "see", images=(image,))
    assert messages_image_tokens([Message("user", "see")]) == 0
    assert messages_image_tokens([with_image]) >= 1500 * 750 // 750


def test_the_billing_estimate_of_a_request_counts_its_images(tmp_path: Path) -> None:
    image = keep(png(1500, 750), tmp_path, "wide.png")
    billing = Billing(Spend(Pricing("m", "p", None)), Estimate(), wire_texts)
    plain = ChatRequest("m", "sys", (Message("user", "see"),))
    shown = ChatRequest("m", "sys", (Message("user", "see", images=(image,)),))
    assert billing.input_tokens(shown) - billing.input_tokens(plain) == image_tokens(image)
    assert image_tokens(image) == 1500  # Anthropic's rule, the larger here: 1500 * 750 / 750
