"""Images a message carries: recognised by their magic bytes, kept in the conversation's
folder no larger than any provider takes, sent downscaled to the provider's own limit, and
counted as the providers bill them. Pillow is imported only where an image is read."""

from __future__ import annotations

import atexit
import base64
import hashlib
import io
import math
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from .message import ImageRef, Message

OPENAI_SIDE = 2048
"""The longest side OpenAI's chat API keeps (it scales larger images down itself)."""
ANTHROPIC_SIDE = 1568
"""The longest side Anthropic's API takes without scaling (and slowing) the image down."""
KEPT_SIDE = max(OPENAI_SIDE, ANTHROPIC_SIDE)
"""What the conversation's folder keeps: the largest any provider takes."""
MAX_BYTES = 20_000_000
"""A larger file is refused before it is decoded."""

_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
          (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))
_SUFFIX = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
_FORMAT = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP"}


def media_type(data: bytes) -> str | None:
    """The image type ``data`` starts as (png, jpeg, gif, webp), or None: the bytes decide,
    not the file's name."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    return "image/webp" if data[:4] == b"RIFF" and data[8:12] == b"WEBP" else None


def is_image_file(path: Path) -> bool:
    """Whether ``path`` is a file whose first bytes are an image's."""
    try:
        if not path.is_file():  # not a pipe, whose opening would wait for a writer
            return False
        with path.open("rb") as file:
            return media_type(file.read(16)) is not None
    except (OSError, ValueError):  # a name too long, a NUL in it
        return False


def _fitted(data: bytes, kind: str, side: int) -> tuple[bytes, int, int]:
    """``data`` no longer than ``side`` on its longest side, and its width and height."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if max(width, height) <= side:
                return data, width, height
            scale = side / max(width, height)
            size = (max(1, round(width * scale)), max(1, round(height * scale)))
            smaller = image.convert("RGBA" if kind != "image/jpeg" else "RGB").resize(
                size, Image.Resampling.LANCZOS)
    except Image.DecompressionBombError as err:  # not an OSError: said as one
        raise ValueError(str(err)) from err
    out = io.BytesIO()
    smaller.save(out, _FORMAT[kind])
    return out.getvalue(), *size


def keep(data: bytes, folder: Path, source: str) -> ImageRef:
    """Stores image ``data`` (from ``source``, for the record) in ``folder``, downscaled to
    :data:`KEPT_SIDE`, named by its content so the same image is kept once. Raises
    ValueError for bytes that are no image fencecall sends, or too many of them."""
    kind = media_type(data)
    if kind is None:
        raise ValueError(f"{source} is not a png, jpeg, gif or webp image")
    if len(data) > MAX_BYTES:
        raise ValueError(f"{source} is {len(data)} bytes, over the {MAX_BYTES}-byte limit")
    try:
        fitted, width, height = _fitted(data, kind, KEPT_SIDE)
    except (OSError, ValueError) as err:  # Pillow's UnidentifiedImageError is an OSError
        raise ValueError(f"{source}: the image cannot be read ({err})") from err
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(fitted).hexdigest()[:16]}.{_SUFFIX[kind]}"
    if not path.exists():
        path.write_bytes(fitted)
    return ImageRef(str(path), kind, width, height, len(fitted), source)


def load(path: Path, folder: Path) -> ImageRef:
    """The image file at ``path``, kept in ``folder`` (see :func:`keep`)."""
    return keep(path.read_bytes(), folder, str(path))


@lru_cache(maxsize=1)
def scratch_folder() -> Path:
    """Where images wait until a conversation keeps them (see :func:`adopted`): a private
    temporary folder of this process, removed when it exits."""
    folder = tempfile.mkdtemp(prefix="fencecall-images-")
    atexit.register(shutil.rmtree, folder, True)
    return Path(folder)


def adopted(image: ImageRef, folder: Path) -> ImageRef:
    """``image`` with its file in ``folder`` (copied there if it is elsewhere), so a log's
    reference outlives the file it came from."""
    path = Path(image.path)
    if path.parent == folder:
        return image
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / path.name
    if not kept.exists():
        shutil.copyfile(path, kept)
    return replace(image, path=str(kept))


@lru_cache(maxsize=16)
def _encoded(path: str, kind: str, side: int) -> str:
    data, _, _ = _fitted(Path(path).read_bytes(), kind, side)
    return base64.b64encode(data).decode("ascii")


def encoded(image: ImageRef, side: int) -> str:
    """The kept image as base64, no longer than ``side`` (the provider's limit)."""
    return _encoded(image.path, image.media_type, side)


def sent_size(image: ImageRef, side: int) -> tuple[int, int]:
    """The width and height the image is sent at, under a provider's ``side``."""
    scale = min(1.0, side / max(image.width, image.height, 1))
    return max(1, round(image.width * scale)), max(1, round(image.height * scale))


def anthropic_tokens(image: ImageRef) -> int:
    """Anthropic's count: width * height / 750, at the size it is sent."""
    width, height = sent_size(image, ANTHROPIC_SIDE)
    return math.ceil(width * height / 750)


def openai_tokens(image: ImageRef) -> int:
    """OpenAI's tile rule (high detail): fit in 2048 square, shortest side to 768, then 170
    tokens per 512-pixel tile and 85 more."""
    width, height = sent_size(image, OPENAI_SIDE)
    if min(width, height) > 768:
        scale = 768 / min(width, height)
        width, height = round(width * scale), round(height * scale)
    return 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)


def image_tokens(image: ImageRef) -> int:
    """What an image costs in a request, erring high: the larger of the two rules."""
    return max(anthropic_tokens(image), openai_tokens(image))


def messages_image_tokens(messages: Iterable[Message]) -> int:
    """What the images of ``messages`` add to a request's input tokens."""
    return sum(image_tokens(image) for message in messages for image in message.images)


def described(image: ImageRef, *, gone: bool = False) -> str:
    """The note a model gets in the image's place: it takes no images, or the kept file is
    ``gone``."""
    why = f"its file {image.path} is gone" if gone else "this model takes no images"
    return f"[an image of {image.width}×{image.height} ({image.source}); {why}]"  # noqa: RUF001
