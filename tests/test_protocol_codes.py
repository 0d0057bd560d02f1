"""Every code in the registry is sent by a real server in at least one test.

`tests/conftest.py` notes each ``error`` frame any in-process client receives and
moves this test to the end of the session. Run alone (or with a part of the suite)
it is skipped: only the whole suite can show that a code is never produced.
"""

from __future__ import annotations

import pytest
from conftest import ErrorCodesSeen

from protocol.errors import ErrorCode

#: Codes no test receives yet; the server core's rewrite makes each one received.
#: Empty this set as each one is produced; the test fails unless it is exactly the
#: set of registry codes no test received, so an entry cannot outlive its reason.
NOT_PRODUCED_YET: frozenset[ErrorCode] = frozenset()


def test_every_error_code_is_received_from_a_real_server(error_codes_seen: ErrorCodesSeen) -> None:
    if not error_codes_seen.whole_suite:
        pytest.skip("enforced only when the whole suite runs")
    received = set(error_codes_seen.received)
    registry = {code.value for code in ErrorCode}
    assert not received - registry, f"a server sent codes outside the registry: {sorted(received - registry)}"
    missing = {code for code in ErrorCode if code.value not in received}
    assert not missing - NOT_PRODUCED_YET, f"no test received: {sorted(missing - NOT_PRODUCED_YET)}"
    assert not NOT_PRODUCED_YET - missing, (
        f"now received, remove from NOT_PRODUCED_YET: {sorted(NOT_PRODUCED_YET - missing)}"
    )
