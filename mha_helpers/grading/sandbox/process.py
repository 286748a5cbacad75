"""One run's process, from the grader's side: started, fed its job, read with caps until it
exits or its time is up, then ended with everything it started, whatever its inside did.

The sandbox's report comes back on its stdout, read here with a size cap and a deadline; it is
untrusted data (see :mod:`.report_schema`). Ending a run (:class:`_Handle`) kills its cgroup,
the sandbox's PID 1 through a pidfd (when a PID namespace's init dies, the kernel kills
everything in it) and bubblewrap's process group. :func:`kill_all` does that to every running
sandbox, at the grader's exit or on a signal, and starts no new one.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import subprocess
import threading
import time

from . import cgroups
from .limits import Limits

__all__ = ["run_process", "kill_all", "closing", "pidfd_from_info", "outer_env"]


_LIVE: dict = {}
_LIVE_LOCK = threading.Lock()
_CLOSING = threading.Event()


class _Handle:
    """Everything needed to end one running sandbox, whatever its inside did."""

    def __init__(self, proc, cgroup: cgroups.Cgroup | None):
        self.proc, self.cgroup, self.pidfd = proc, cgroup, None

    def kill(self) -> None:
        if self.cgroup is not None:
            self.cgroup.kill()
        if self.pidfd is not None:  # the sandbox's PID 1: its namespace dies with it
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        if self.cgroup is not None:
            self.cgroup.remove()


def kill_all() -> None:
    """End every running sandbox now and start no new one (the grader is exiting)."""
    _CLOSING.set()
    with _LIVE_LOCK:
        handles = list(_LIVE.values())
    for h in handles:
        h.kill()
    cgroups.sweep()  # cgroups whose processes were still exiting


atexit.register(kill_all)
try:  # before the interpreter waits for worker threads, which may be inside a sandbox
    threading._register_atexit(kill_all)
except (AttributeError, RuntimeError):
    pass


def closing() -> bool:
    """True once :func:`kill_all` ran: no new sandbox may start."""
    return _CLOSING.is_set()


def run_process(
    argv,
    stdin: bytes,
    limits: Limits,
    pass_fds=(),
    env=None,
    cwd=None,
    cgroup=None,
    info_r=None,
    second: bytes | None = None,
    enter: bool = True,
):
    """Run, feed stdin, read stdout/stderr with caps until exit or the deadline, then end
    everything the run started (see :class:`_Handle`). With ``second``, stdin stays open and
    ``second`` is written (then stdin closed) only once a whole line starting ``result `` has
    come out on stdout (:class:`_Second`).
    ``enter=False``: ``argv`` moves itself into ``cgroup`` (the prelude does).
    Returns ``(returncode or None on timeout, stdout, stderr, reason)``."""
    if cgroup is not None and enter:
        argv = ["/bin/sh", "-c", cgroups.ENTER, "sh", *cgroup.procs_files(), "--", *argv]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=pass_fds,
            close_fds=True,
            start_new_session=True,
            cwd=cwd,
            env=env if env is not None else outer_env(),
        )
    except OSError as exc:
        return None, b"", str(exc).encode(), f"could not start: {exc}"
    handle = _Handle(proc, cgroup)
    key = id(handle)
    with _LIVE_LOCK:
        _LIVE[key] = handle
    if _CLOSING.is_set():
        handle.kill()
    deadline = time.monotonic() + limits.wall_seconds
    capture = _Capture(proc, limits.report_bytes)
    capture.second = _Second(proc, second) if second else None
    reason = ""
    try:
        _feed(proc, stdin, close=second is None)
        reason = _read_until_exit(proc, handle, capture, deadline, info_r)
    finally:
        _end(proc, handle, key)
    if capture.over(proc.stdout):
        reason = reason or "report too large"
    rc = None if reason == "timeout" else proc.returncode
    if cgroup is not None and rc == 125 and not capture.chunks[proc.stdout]:
        reason = reason or "could not enter the sandbox's cgroup"
    return rc, capture.text(proc.stdout), capture.text(proc.stderr), reason


class _Capture:
    """What a run wrote on stdout and stderr: each kept up to its cap, counted beyond it."""

    def __init__(self, proc, report_bytes: int):
        self.caps = {proc.stdout: report_bytes, proc.stderr: 64 * 1024}
        self.chunks = {proc.stdout: [], proc.stderr: []}
        self.sizes = {proc.stdout: 0, proc.stderr: 0}

    def add(self, f, data: bytes) -> None:
        if self.sizes[f] < self.caps[f]:
            self.chunks[f].append(data[: self.caps[f] - self.sizes[f]])
        self.sizes[f] += len(data)

    def over(self, f) -> bool:
        return self.sizes[f] > self.caps[f]

    def text(self, f) -> bytes:
        return b"".join(self.chunks[f])


def _feed(proc, stdin: bytes, close: bool = True) -> None:
    """Write the job and close stdin (a run that does not read it is not waited for)."""
    try:
        proc.stdin.write(stdin)
        proc.stdin.flush()
    except (BrokenPipeError, OSError, ValueError):
        close = True
    finally:
        if close:
            try:
                proc.stdin.close()
            except OSError:
                pass


class _Second:
    """The hidden cases, held back until the first whole ``result`` line has been read from
    stdout; then written from a thread (student code runs by then and need not read them: the
    grader never blocks on it) and stdin closed."""

    def __init__(self, proc, data: bytes):
        self.proc, self.data = proc, data
        self.head = b""  # the start of the current line (up to 7 bytes)
        self.result_line = False
        self.sent = False

    def saw(self, data: bytes) -> None:
        for part in data.split(b"\n")[:-1] if b"\n" in data else []:
            self._add(part)
            if self.result_line:
                self._send()
                return
            self.head, self.result_line = b"", False
        self._add(data.rsplit(b"\n", 1)[-1])

    def _add(self, part: bytes) -> None:
        if len(self.head) < 7:
            self.head += part[: 7 - len(self.head)]
            self.result_line = self.head == b"result "

    def _send(self) -> None:
        if self.sent:
            return
        self.sent = True
        threading.Thread(target=_feed, args=(self.proc, self.data), daemon=True).start()


def _read_until_exit(proc, handle: _Handle, capture: _Capture, deadline: float, info_r) -> str:
    """Read stdout and stderr until both close or the deadline passes (then the reason is
    ``"timeout"``); take the sandbox's PID 1 from bwrap's ``--info-fd`` as soon as it is
    written, so it can be ended by pidfd."""
    info = bytearray()
    reason = ""
    sel = selectors.DefaultSelector()
    for f in (proc.stdout, proc.stderr):
        os.set_blocking(f.fileno(), False)
        sel.register(f, selectors.EVENT_READ)
    if info_r is not None:
        os.set_blocking(info_r, False)
        sel.register(info_r, selectors.EVENT_READ)
    while any(k.fileobj is not info_r for k in sel.get_map().values()):
        left = deadline - time.monotonic()
        if left <= 0:
            reason = "timeout"
            break
        for key_, _ in sel.select(timeout=min(left, 1.0)):
            f = key_.fileobj
            fd = f if isinstance(f, int) else f.fileno()
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if f is info_r:
                info += data[:4096]
                if not data or len(info) >= 4096:
                    sel.unregister(f)
                    handle.pidfd = pidfd_from_info(bytes(info))
                continue
            if not data:
                sel.unregister(f)
                continue
            capture.add(f, data)
            if f is proc.stdout and capture.second is not None:
                capture.second.saw(data)
    if handle.pidfd is None and info:
        handle.pidfd = pidfd_from_info(bytes(info))
    sel.close()
    return reason


def _end(proc, handle: _Handle, key) -> None:
    """End everything the run started, wait for bubblewrap, and forget the run."""
    handle.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for f in (proc.stdout, proc.stderr):
        f.close()
    with _LIVE_LOCK:
        _LIVE.pop(key, None)
    handle.close()


def pidfd_from_info(info: bytes):
    """A pidfd of the sandbox's PID 1 from bwrap's ``--info-fd`` JSON (taken while the sandbox
    runs, so a recycled PID can never be signalled by mistake), or None."""
    try:
        pid = int(json.loads(info.decode("utf-8", "replace").strip() or "{}")["child-pid"])
        return os.pidfd_open(pid)
    except (ValueError, KeyError, TypeError, OSError, AttributeError):
        return None


def outer_env() -> dict:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
