"""Reading a client's frame: the message, or a `ProtocolError` with an honest code.

`read_client` is what a server calls on every text frame. A valid frame costs one
pydantic validation, as `messages.parse_client`; only a bad one is looked at again
to say what is wrong and to recover its ``ref``:

- not UTF-8 JSON, or JSON that is not an object: ``bad_json``; so is a string holding a
  lone surrogate (``"\\ud800"``: no Unicode text, nothing a reply could echo) and JSON
  nested deeper than the parser's limit (``"[" * 2000``);
- ``type`` missing or naming no client message: ``unknown_type``;
- a ``move`` whose ``cell`` is not an integer: ``malformed_move`` (any integer is
  well-formed: the room answers ``cell_out_of_range`` for one outside its board);
- a ``time_control`` of unknown kind or out of range: ``bad_time_control``;
- a ``ply_cap`` that is not an integer from 1 to 10000: ``bad_ply_cap``;
- an ``opening`` that is not a list of cells: ``bad_opening``;
- a ``hello`` whose ``name`` is not a valid player name: ``bad_name``;
- anything else (a field missing, unknown or of the wrong type): ``bad_message``.

When a frame has several faults, the first one with a specific code decides it.
Whether a frame may be binary or too large is the transport's business
(``binary_frame``, ``frame_too_large``), not this module's.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from protocol import messages as m
from protocol.errors import ErrorCode, ProtocolError

#: Codes for faults in one field of a message, by (message type or None for any, field).
_FIELD_CODES: dict[tuple[str | None, str], ErrorCode] = {
    ("move", "cell"): ErrorCode.MALFORMED_MOVE,
    ("hello", "name"): ErrorCode.BAD_NAME,
    (None, "time_control"): ErrorCode.BAD_TIME_CONTROL,
    (None, "ply_cap"): ErrorCode.BAD_PLY_CAP,
    (None, "opening"): ErrorCode.BAD_OPENING,
}
_REF_MAX = 64
_NOT_TEXT = "a frame must be one JSON object, as UTF-8 text"


def read_client(frame: str | bytes) -> m.ClientMessage:
    """The client message in ``frame``.

    Raises:
        ProtocolError: the frame is not a valid client message; its ``code`` says why
            and its ``ref`` is the frame's, when one could be read.
    """
    try:
        message = m.parse_client(frame)
    except ValidationError as exc:
        raise _refusal(frame, exc) from None
    # Only a ``\\u`` escape can make a lone surrogate: valid UTF-8 cannot hold one.
    escaped = b"\\u" in frame if isinstance(frame, bytes) else "\\u" in frame
    if escaped and _unpaired(json.dumps(json.loads(frame), ensure_ascii=False)):
        raise ProtocolError(ErrorCode.BAD_JSON, _NOT_TEXT)
    return message


def ref_of(frame: str | bytes) -> str | None:
    """The ``ref`` of ``frame``, when it is a JSON object whose ``ref`` is a valid ref."""
    data = _object(frame)
    return None if data is None else _valid_ref(data.get("ref"))


def _valid_ref(ref: object) -> str | None:
    if not isinstance(ref, str) or len(ref) > _REF_MAX or _unpaired(ref):
        return None
    return ref


def _unpaired(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (it cannot be encoded as UTF-8)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


def _object(frame: str | bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(frame)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError too
        return None
    return data if isinstance(data, dict) else None


def _refusal(frame: str | bytes, exc: ValidationError) -> ProtocolError:
    errors = exc.errors(include_url=False)
    if errors[0]["type"] == "json_invalid":  # not JSON (or too deep): nothing more to read
        return ProtocolError(ErrorCode.BAD_JSON, _NOT_TEXT)
    data = _object(frame)
    if data is None or _unpaired(json.dumps(data, ensure_ascii=False)):
        return ProtocolError(ErrorCode.BAD_JSON, _NOT_TEXT)
    ref = _valid_ref(data.get("ref"))
    if errors[0]["type"] in ("union_tag_not_found", "union_tag_invalid") and not errors[0]["loc"]:
        kind = data.get("type")
        what = "has no type" if kind is None else f"has type {kind!r}, which names no client message"
        return ProtocolError(ErrorCode.UNKNOWN_TYPE, f"the message {what}", ref)
    code = next((c for c in (_field_code(e["loc"]) for e in errors) if c is not None), ErrorCode.BAD_MESSAGE)
    return ProtocolError(code, _describe(errors), ref)


def _field_code(loc: tuple[int | str, ...]) -> ErrorCode | None:
    if len(loc) < 2:
        return None
    kind, field = str(loc[0]), str(loc[1])
    return _FIELD_CODES.get((kind, field)) or _FIELD_CODES.get((None, field))


def _describe(errors: list[Any]) -> str:
    """What is wrong, for a person: up to three faults, each with its field's path."""
    parts = []
    for err in errors[:3]:
        path = ".".join(str(part) for part in err["loc"][1:])
        parts.append(f"{path}: {err['msg']}" if path else str(err["msg"]))
    return "; ".join(parts)[:300]
