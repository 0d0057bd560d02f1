"""A PostgreSQL server gone silent (the node's cable pulled: packets lost, no reset) ends
the store's connection after about its stall (`server.postgres.silence`), whether the
node was about to send a statement or waiting for a reply; TCP alone would wait many
minutes (data never acknowledged) or hours (a reply that never comes). The connection
opens again once the cable is back. Run on a host of its own (a network namespace), the
real `PgConnection` against a real PostgreSQL across the bridge."""

from __future__ import annotations

import selectors
import subprocess
import sys
import time
from pathlib import Path

import netns_hosts
from pg_harness import hosts_and_postgres

#: The stall the connections are made with: a clustered node's, with leases of 2 s.
STALL = 2.0
#: How long the test waits for an answer (TCP's own bounds are minutes, the stall's seconds).
PATIENCE = 30.0

#: One connection, one statement a line of stdin: ``one`` (SELECT 1) or ``sleep``
#: (pg_sleep(3), the reply pending when the cable is pulled); each answered on stdout.
SCRIPT = r"""
import sys, time
from server.postgres import PgConnection
conn = PgConnection(sys.argv[1], stall=float(sys.argv[2]))
conn.execute("SELECT 1")
print("ready", flush=True)
for line in sys.stdin:
    started = time.monotonic()
    try:
        conn.execute("SELECT pg_sleep(3)" if line.strip() == "sleep" else "SELECT 1")
        print("answered", flush=True)
    except Exception as exc:
        said = str(exc).replace("\n", " ")
        print(f"failed {type(exc).__name__} after {time.monotonic() - started:.1f} s: {said}", flush=True)
"""


class Statements:
    """The script on host 0, told what to run and read what it answered."""

    def __init__(self, net: netns_hosts.Hosts, url: str) -> None:
        root = str(Path(__file__).resolve().parent.parent)
        self.process = subprocess.Popen(
            net.command(0, "env", f"PYTHONPATH={root}", sys.executable, "-c", SCRIPT, url, str(STALL)),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )  # fmt: skip
        assert self.answer() == "ready"

    def run(self, what: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(what + "\n")
        self.process.stdin.flush()

    def answer(self) -> str:
        """The next line the script prints; fails the test after `PATIENCE` seconds."""
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.process.stdout, selectors.EVENT_READ)
            if not sel.select(PATIENCE):
                raise AssertionError(
                    f"no answer within {PATIENCE} s: the connection hangs on a silent server"
                )
        return self.process.stdout.readline().strip()

    def close(self) -> None:
        self.process.kill()
        self.process.wait(10)


def test_a_silent_server_ends_the_connection_after_the_stall_and_it_opens_again() -> None:
    with hosts_and_postgres(1) as (net, pg):
        pg.create_db("arena")
        statements = Statements(net, pg.url("arena", host=net.gateway))
        try:
            # a reply pending when the cable is pulled: only the keepalives can tell
            statements.run("sleep")
            time.sleep(0.5)
            net.unplug(0)
            assert statements.answer().startswith("failed OperationalError")
            # a statement sent while it is out: never acknowledged
            statements.run("one")
            assert statements.answer().startswith("failed OperationalError")
            net.plug(0)
            # the first try right after can still fail at once (seen here); the next
            # answers, as the writer's next retry would
            for _ in range(5):
                statements.run("one")
                if statements.answer() == "answered":
                    break
                time.sleep(1)
            else:
                raise AssertionError("no connection once the cable was back")
        finally:
            statements.close()
