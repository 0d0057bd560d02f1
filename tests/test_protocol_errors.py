"""The registry of error codes: every error class's code is in it, once."""

from __future__ import annotations

import importlib
import pkgutil

from protocol.errors import ArenaError, ErrorCode, LocalCode, ProtocolError, Refusal

PACKAGES = ("protocol", "server", "bots", "client_tui")


def _every_error_class() -> list[type[ArenaError]]:
    for name in PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            importlib.import_module(info.name)
    found: list[type[ArenaError]] = []
    todo: list[type[ArenaError]] = [ArenaError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_error_class_has_a_registered_code() -> None:
    registered = {code.value for code in [*ErrorCode, *LocalCode]}
    classes = _every_error_class()
    assert len(classes) > 20  # the walk found the tree
    unregistered = [
        f"{cls.__module__}.{cls.__qualname__}: {cls.__dict__['code']!r}"
        for cls in classes
        # a class without its own code inherits one, or takes one per instance (RemoteError, Refusal)
        if "code" in cls.__dict__ and cls.__dict__["code"] not in registered
    ]
    assert not unregistered


def test_the_two_registries_are_apart_and_every_code_has_a_meaning() -> None:
    wire = {code.value for code in ErrorCode}
    local = {code.value for code in LocalCode}
    assert not wire & local
    assert len(wire) == len(ErrorCode) and len(local) == len(LocalCode)
    for code in [*ErrorCode, *LocalCode]:
        assert code.meaning and "\n" not in code.meaning, code
        assert code.name.lower() == code.value


def test_refusals_carry_their_code_and_ref() -> None:
    refusal = Refusal(ErrorCode.SEAT_TAKEN, "seat x is taken")
    assert (refusal.code, refusal.message) == (ErrorCode.SEAT_TAKEN, "seat x is taken")
    error = ProtocolError(ErrorCode.BAD_JSON, "not json", "r1")
    assert isinstance(error, Refusal) and (error.code, error.ref) == ("bad_json", "r1")
