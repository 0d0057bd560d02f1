"""docs/protocol.md is generated from the models: every message has an example, and the
generated sections match the code."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from protocol import messages as m
from protocol.errors import ErrorCode
from server import docs

DOC = Path(__file__).resolve().parent.parent / "docs" / "protocol.md"


def _types(union: object) -> set[str]:
    members = get_args(get_args(union)[0])
    return {member.model_fields["type"].default for member in members}


def test_every_message_has_an_example() -> None:
    assert {str(getattr(e, "type", "")) for e in docs.CLIENT_EXAMPLES} == _types(m.ClientMessage)
    assert {str(getattr(e, "type", "")) for e in docs.SERVER_EXAMPLES} == _types(m.ServerMessage)


def test_generated_sections_are_current() -> None:
    text = DOC.read_text()
    assert docs.messages_section() in text, "run: python -m server.docs"
    assert docs.errors_section() in text, "run: python -m server.docs"
    for code in ErrorCode:
        assert f"| `{code}` | {code.meaning} |" in text
    assert "already_online" not in text  # a second hello takes over; nobody is refused


def test_protocol_schema_command_prints_the_generated_schema(capsys: object) -> None:
    import json

    from protocol.cli import main

    assert main(["protocol-schema"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    schema = json.loads(out)
    assert schema["version"] == m.PROTOCOL_VERSION
    mapping = schema["client_to_server"]["discriminator"]["mapping"]
    assert set(mapping) == _types(m.ClientMessage)
