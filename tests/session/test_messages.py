"""Only the newest user message goes to agy, its inline attachments saved as private files."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest

from omnigent_agy.errors import MessageError, failure_for
from omnigent_agy.session.messages import newest_user_message

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def test_only_the_newest_user_message_is_taken(tmp_path: Path) -> None:
    history = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "an answer"},
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "second"}, {"type": "text", "text": "part"}],
        },
        {"role": "assistant", "content": "thinking out loud"},
    ]
    message = newest_user_message(history, attachments_dir=tmp_path)
    assert message.text == "second\npart"
    assert message.as_prompt() == "second\npart"


def test_an_inline_image_becomes_a_private_file_named_in_the_prompt(tmp_path: Path) -> None:
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    content = [
        {"type": "input_text", "text": "what is in this picture?"},
        {"type": "input_image", "image_url": data_url},
        {
            "type": "input_file",
            "filename": "notes.txt",
            "file_data": base64.b64encode(b"hi").decode(),
        },
    ]
    message = newest_user_message(
        [{"role": "user", "content": content}], attachments_dir=tmp_path / "att"
    )
    assert len(message.attachments) == 2
    image, notes = message.attachments
    assert image.read_bytes() == PNG
    assert image.suffix == ".png"
    assert notes.read_bytes() == b"hi"
    assert notes.name.startswith("notes-")
    assert stat.S_IMODE(image.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "att").stat().st_mode) == 0o700
    prompt = message.as_prompt()
    assert prompt.startswith("what is in this picture?")
    assert str(image) in prompt
    assert str(notes) in prompt


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([], "no user message"),
        ([{"role": "assistant", "content": "hi"}], "no user message"),
        ([{"role": "user", "content": []}], "empty"),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "input_image", "image_url": "https://x.test/a.png"}],
                }
            ],
            "link",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "input_image", "image_url": "data:image/png;base64,@@@"}],
                }
            ],
            "base64",
        ),
        (
            [{"role": "user", "content": [{"type": "input_file", "file_id": "file_123"}]}],
            "inline data",
        ),
    ],
    ids=["nothing", "no-user", "empty", "remote-link", "bad-base64", "file-id"],
)
def test_messages_that_cannot_be_sent_say_why(
    tmp_path: Path, messages: list[dict[str, object]], problem: str
) -> None:
    with pytest.raises(MessageError, match=problem):
        newest_user_message(messages, attachments_dir=tmp_path)


def test_a_message_error_reaches_the_person_with_its_own_code() -> None:
    failure = failure_for(MessageError("an attachment arrived as a link"))
    assert failure.code == "agy_message_unsupported"
    assert "link" in failure.message
    assert failure.remediation
