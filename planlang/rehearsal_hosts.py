"""Rehearsals of one plan in a host process of their own, beside the caller's.

Under process isolation the host's side of a rehearsal (the runtime's run, the stand-in, the
channel to its plan process) is Python bound by this process's interpreter lock: two rehearsals
at once here overlap only their waits on their plan processes, and the second core mostly runs
plan processes. A second host process has a lock of its own, so ``price`` hands it some of the
seeds (``planlang.price``): it checks the plan's source again, rehearses it under process
isolation exactly as here (its own warm plan processes, confined the same way), and sends back
the ``Rehearsal``.

A host process costs about a second of CPU to start (an interpreter, the imports, its own fork
server and warm plan processes), more than a short price takes, so one starts only once a
rehearsal in this process took longer than ``START_AFTER`` seconds: a price of short
rehearsals never pays for it; a long one starts it while it goes on (the seeds not yet taken
when it is warm go to it too), and the prices after have it from their start.

Only what can be rebuilt there goes: the source (so only ``check``'s own code runs), a seed, the
settings without the endpoint's key and address (a rehearsal sends nothing), the inputs, the
limits and the latency; never an embedder's host words, which live in the caller's process
(a price with ``host=`` rehearses here, as before). The process is this interpreter running this
module, started with the environment minus anything named like a secret. Both ends are the
host's own code, so they talk in pickles, over the host process's stdin and stdout: its plan
processes never hold these pipes (its fork server is exec'd with /dev/null for its standard
streams and every other descriptor closed). A host process that fails or dies leaves its seed
to the caller, which rehearses it here; any error a rehearsal raises is raised by the caller's
own rehearsal of that seed, as before.
"""

from __future__ import annotations

import atexit
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planlang.rehearse import Rehearsal

__all__ = ["HostGone", "RehearsalHost", "clean_environment", "running_hosts", "start_hosts"]

HOSTS = 1  # host processes beside the caller's (this machine's second core)
START_AFTER = 0.5  # seconds one rehearsal took before its process starts its hosts
# Past a job's time limit (twice over: the host checks the source too, and may be loaded),
# seconds before a host that has not answered is taken for stuck: killed, its seed done here.
ANSWER_GRACE = 30.0
WARM_WITHIN = 300.0  # seconds a host may take to start before it is taken for stuck
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
# The endpoint's address (a rehearsal sends nothing; a URL may carry credentials).
_ENDPOINT = ("LLM_BASE_URL", "PLANLANG_BASE_URL")
_LENGTH = struct.Struct(">I")
_READY = b"ready"


class HostGone(Exception):
    """The host process cannot rehearse this seed (it died, or failed): rehearse it here."""


def clean_environment() -> dict[str, str]:
    """The caller's environment without anything named like a secret (LLM_API_KEY among them),
    with the folders this process found planlang and the runtime in first on PYTHONPATH: the
    host process runs the very code this one does, whatever put it on ``sys.path`` here."""
    import planlang
    import runtime

    env = {name: value for name, value in os.environ.items()
           if not any(word in name.upper() for word in _SECRET_WORDS)
           and name.upper() not in _ENDPOINT}  # fmt: skip
    found = [os.path.dirname(os.path.dirname(os.path.abspath(package.__file__ or "")))
             for package in (planlang, runtime)]  # fmt: skip
    paths = [*found, env["PYTHONPATH"]] if env.get("PYTHONPATH") else found
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def _read_exactly(fd: int, size: int, deadline: float) -> bytes:
    """``size`` bytes from ``fd`` by ``deadline`` (time.monotonic), or EOFError / TimeoutError."""
    chunks: list[bytes] = []
    wanted = size
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while wanted:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            raise TimeoutError("it did not answer in time")
        chunk = os.read(fd, min(wanted, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        wanted -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes, deadline: float) -> None:
    """All of ``data`` to the non-blocking ``fd`` by ``deadline``, or TimeoutError."""
    view = memoryview(data)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    while view:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            raise TimeoutError("it did not take the job in time")
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            continue


class RehearsalHost:
    """One host process for rehearsals, one job at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ready = threading.Event()
        self.served = 0  # rehearsals it sent back
        self.process: subprocess.Popen[bytes] | None = None
        self.gone = False

    def start(self) -> None:
        """Start the process and wait for it to be warm (on a thread of the caller's)."""
        try:
            self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "planlang.rehearsal_hosts"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=clean_environment(), close_fds=True,
            )  # fmt: skip
            assert self.process.stdin is not None and self.process.stdout is not None
            os.set_blocking(self.process.stdin.fileno(), False)  # writes wait in _write_all
            ready = _read_exactly(self.process.stdout.fileno(), len(_READY),
                                  time.monotonic() + WARM_WITHIN)  # fmt: skip
            if ready != _READY:
                raise HostGone("it did not start")
        except (OSError, EOFError, HostGone):
            self.gone = True
            self.stop()
            return
        finally:
            self.ready.set()

    def rehearse(self, job: dict[str, Any]) -> Rehearsal:
        """The rehearsal of ``job`` (``serve``'s keywords), or HostGone (also when it has not
        answered within twice the job's time limit plus ``ANSWER_GRACE``: it is killed)."""
        from planlang.sandbox.limits import Limits

        patience = 2 * (job.get("limits") or Limits()).seconds + ANSWER_GRACE
        # Busy: it rehearses another price's seed (a price's seeds go to it one at a time,
        # from one thread), which may take that plan's time limit, twice over plus the
        # grace, before the next of that price's. Waiting here made one price's plan set the
        # time of every price made beside it (REDTEAM11): the seed is rehearsed here instead.
        if not self._lock.acquire(blocking=False):
            raise HostGone("it is rehearsing another price's seed")
        try:
            process = self.process
            if self.gone or process is None or process.stdin is None or process.stdout is None:
                raise HostGone("it is not running")
            try:
                body = pickle.dumps(job)
                deadline = time.monotonic() + patience
                _write_all(process.stdin.fileno(), _LENGTH.pack(len(body)) + body, deadline)
                fd = process.stdout.fileno()
                head = _read_exactly(fd, _LENGTH.size, deadline)
                body = _read_exactly(fd, _LENGTH.unpack(head)[0], deadline)
                answer = pickle.loads(body)  # noqa: S301 - our own host process's pickle
            except Exception as error:  # noqa: BLE001 - whatever it was, the seed is done here
                self.gone = True
                self.stop()
                raise HostGone(f"it ended: {error!r}") from None
            if answer is None:
                raise HostGone("it could not rehearse this seed")
            self.served += 1
            return answer
        finally:
            self._lock.release()

    def stop(self) -> None:
        """Kill the process (if it runs) and close its pipes."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:  # a write the pipe did not take
                    pass


_hosts: list[RehearsalHost] = []
_hosts_lock = threading.Lock()


@atexit.register
def _stop_hosts() -> None:
    """At exit: each host process is stopped and its pipes closed (no unclosed files)."""
    for host in list(_hosts):
        host.stop()


def running_hosts() -> list[RehearsalHost]:
    """This process's rehearsal hosts started so far, those that died left out (one may
    still be warming: ``RehearsalHost.ready`` says when it can take a seed)."""
    with _hosts_lock:
        _hosts[:] = [host for host in _hosts if not host.gone]
        return list(_hosts)


def start_hosts() -> list[RehearsalHost]:
    """``running_hosts``, with as many started as ``HOSTS`` says (each warms on a thread of
    its own: nothing waits for it)."""
    with _hosts_lock:
        _hosts[:] = [host for host in _hosts if not host.gone]
        while len(_hosts) < HOSTS:
            host = RehearsalHost()
            threading.Thread(target=host.start, name="planlang-rehearsal-host",
                             daemon=True).start()  # fmt: skip
            _hosts.append(host)
        return list(_hosts)


# -- the host process ---------------------------------------------------------------------


def _serve() -> None:
    """Rehearse each job read on stdin; write back its Rehearsal, or None when it raised."""
    from planlang.check import check
    from planlang.rehearse import rehearse
    from runtime import Settings

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write to the answers' pipe
    rehearse(check("x = 1"), seed=0, settings=Settings(), isolation="process")  # warm: its pool
    stdout.write(_READY)
    stdout.flush()
    checked: dict[tuple[str, str], Any] = {}
    while True:
        head = stdin.read(_LENGTH.size)
        if len(head) != _LENGTH.size:
            return
        body = stdin.read(_LENGTH.unpack(head)[0])
        try:
            job = pickle.loads(body)  # noqa: S301 - from our host
            key = (job.pop("source"), job.pop("filename"))
            if key not in checked:
                if len(checked) > 8:
                    checked.clear()
                checked[key] = check(*key)
            answer = pickle.dumps(rehearse(checked[key], isolation="process", **job))
        except Exception:  # noqa: BLE001 - the caller rehearses it itself, and raises it there
            answer = pickle.dumps(None)
        stdout.write(_LENGTH.pack(len(answer)) + answer)
        stdout.flush()


if __name__ == "__main__":
    _serve()
