"""A real PostgreSQL for the tests (and `bench/load.py`): ``initdb`` and ``postgres`` from
/usr/lib/postgresql/*/bin, run as the ``postgres`` user (``runuser -u postgres --``,
since the tests run as root and PostgreSQL refuses root) in a temporary folder, on a
free port of 127.0.0.1, stopped and removed at the end.

Fixtures (conftest.py makes them visible everywhere):

- ``pg_cluster``: one server for the whole session;
- ``pg_url``: a fresh database on it for one test;
- ``any_db``: parametrized, a SQLite file, then a PostgreSQL database: a test that takes
  it runs on both stores.

Where no PostgreSQL binaries exist the PostgreSQL cases skip, saying so.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import netns_hosts
import pytest

USER = "postgres"


def bin_dir() -> Path | None:
    """The newest PostgreSQL's binaries, or None."""
    found = [Path(d) for d in glob.glob("/usr/lib/postgresql/*/bin") if os.path.exists(f"{d}/initdb")]
    found.sort(key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0)
    return found[-1] if found else None


def why_not() -> str | None:
    """Why no PostgreSQL can be started here (None: it can)."""
    if bin_dir() is None:
        return "no PostgreSQL binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(USER)
        except KeyError:
            return "running as root and there is no postgres user to run PostgreSQL as"
        if shutil.which("runuser") is None:
            return "running as root and there is no runuser to run PostgreSQL as postgres"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class PgCluster:
    """One PostgreSQL server in a folder of its own. ``start``, ``stop`` (and start again),
    ``destroy`` at the end. ``durable=False`` turns fsync off (tests); the benchmark keeps it."""

    def __init__(self, durable: bool = False, listen: str = "", trust: str = "") -> None:
        """``listen``: another address to listen on besides 127.0.0.1; ``trust``: a network
        (``10.1.2.0/24``) whose clients may connect without a password."""
        problem = why_not()
        if problem is not None:
            raise RuntimeError(problem)
        self.bin = bin_dir()
        self.dir = Path(tempfile.mkdtemp(prefix="ttt-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self.durable = durable
        if os.geteuid() == 0:
            entry = pwd.getpwnam(USER)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync")
        self.listen = "127.0.0.1" + (f",{listen}" if listen else "")
        if trust:
            with open(self.data / "pg_hba.conf", "a") as hba:
                hba.write(f"host all all {trust} trust\n")

    def _run(self, tool: str, *args: str) -> None:
        assert self.bin is not None
        cmd = [str(self.bin / tool), *args]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", USER, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=self.dir, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stdout}{done.stderr}")

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses={self.listen} -c max_connections=200 "
            + ("" if self.durable else "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        )
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.dir / "log"), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, db: str = "postgres", host: str = "127.0.0.1") -> str:
        return f"postgresql://{USER}@{host}:{self.port}/{db}"

    def create_db(self, name: str | None = None) -> str:
        """A new, empty database; its URL."""
        import psycopg

        name = name or f"t_{secrets.token_hex(4)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def destroy(self) -> None:
        with contextlib.suppress(RuntimeError):  # not running
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def own_cluster() -> Iterator[PgCluster]:
    """A PostgreSQL cluster of the caller's own (one a test may stop and start), started,
    and destroyed afterwards; the test is skipped where none can run here."""
    problem = why_not()
    if problem is not None:
        pytest.skip(problem)
    cluster = PgCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


@contextlib.contextmanager
def hosts_and_postgres(count: int) -> Iterator[tuple[netns_hosts.Hosts, PgCluster]]:
    """``count`` hosts of their own (`netns_hosts`) and a PostgreSQL cluster listening on
    their bridge (this process's address there) and trusting them; both gone afterwards.
    The test is skipped where either cannot run here."""
    problem = why_not() or netns_hosts.why_not()
    if problem is not None:
        pytest.skip(problem)
    with netns_hosts.hosts(count) as net:
        cluster = PgCluster(listen=net.gateway, trust=net.network)
        try:
            cluster.start()
            yield net, cluster
        finally:
            cluster.destroy()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    with own_cluster() as cluster:
        yield cluster


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> str:
    """A fresh database on the session's PostgreSQL."""
    return pg_cluster.create_db()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """What ``--db`` takes: a SQLite file, or (second run) a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "arena.db")
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    return cluster.create_db()
