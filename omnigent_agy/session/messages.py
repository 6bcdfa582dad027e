"""What of omnigent's messages goes to agy: the newest user message, attachments as files.

omnigent resends the whole history every turn while agy keeps its own (docs/decisions.md §3), so
only the last user message is sent. Its text blocks are joined; images and files that arrive
inline (data URLs or base64) are written into the session's private attachments folder and
named in the text, so agy can read them with its own file tools.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnigent_agy.agy.statedir import write_private_file
from omnigent_agy.errors import MessageError

_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?:;[^,]*)?;base64,(?P<data>.*)$", re.S)
MAX_ATTACHMENT_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class UserMessage:
    text: str
    attachments: tuple[Path, ...] = ()

    def as_prompt(self) -> str:
        """The text agy receives: the message, then one line per attached file."""
        if not self.attachments:
            return self.text
        lines = [f"- {path}" for path in self.attachments]
        note = "Attached files (read them with your file tools):\n" + "\n".join(lines)
        return f"{self.text}\n\n{note}" if self.text else note


def newest_user_message(
    messages: Sequence[Mapping[str, Any]], *, attachments_dir: Path
) -> UserMessage:
    """The last user message of `messages`, its inline attachments saved under `attachments_dir`."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return user_message(message.get("content"), attachments_dir)
    raise MessageError("there is no user message to send to agy")


def user_message(content: object, attachments_dir: Path) -> UserMessage:
    """One message's content (a string or content blocks), its attachments saved."""
    if isinstance(content, str):
        return UserMessage(content)
    if not isinstance(content, list):
        raise MessageError("the user message has no text")
    texts: list[str] = []
    files: list[Path] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        text = block.get("text")
        if isinstance(text, str) and kind in (None, "text", "input_text"):
            texts.append(text)
        elif kind in ("input_image", "input_file", "input_audio", "image_url"):
            files.append(_save_attachment(block, attachments_dir))
    message = UserMessage("\n".join(texts), tuple(files))
    if not message.text and not message.attachments:
        raise MessageError("the user message is empty")
    return message


def _save_attachment(block: Mapping[str, Any], directory: Path) -> Path:
    raw, mime, name = _attachment_bytes(block)
    if len(raw) > MAX_ATTACHMENT_BYTES:
        raise MessageError(
            f"an attachment of {len(raw)} bytes is over the {MAX_ATTACHMENT_BYTES}-byte limit"
        )
    digest = hashlib.sha256(raw).hexdigest()[:16]
    suffix = Path(name).suffix if name else (mimetypes.guess_extension(mime or "") or ".bin")
    stem = re.sub(r"[^\w.-]", "_", Path(name).stem)[:40] if name else "attachment"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / f"{stem}-{digest}{suffix}"
    if not path.exists():
        # Renamed into place whole, 0600 from the start: agy (or the same message sent again
        # by a respawned harness) may read it while another writer is still writing.
        write_private_file(path, raw, durable=False)
    return path


def _attachment_bytes(block: Mapping[str, Any]) -> tuple[bytes, str | None, str | None]:
    name = block.get("filename") if isinstance(block.get("filename"), str) else None
    url = block.get("image_url")
    if isinstance(url, Mapping):
        url = url.get("url")
    data = block.get("file_data") or block.get("data")
    source = url if isinstance(url, str) else data if isinstance(data, str) else None
    if source is None:
        raise MessageError(
            "an attachment arrived without inline data (only data URLs and base64 content "
            "can be handed to agy); attach the file to the workspace instead"
        )
    if source.startswith(("http://", "https://", "file:")):
        raise MessageError(
            "an attachment arrived as a link, which omnigent-agy does not fetch; "
            "attach the file's content or put it in the workspace"
        )
    match = _DATA_URL.match(source)
    mime = match.group("mime") if match else None
    payload = match.group("data") if match else source
    try:
        return base64.b64decode(payload, validate=True), mime, name
    except (binascii.Error, ValueError) as exc:
        raise MessageError("an attachment's data is not valid base64") from exc
