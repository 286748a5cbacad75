"""The grading sandbox's layers, each observed from INSIDE a real sandbox (course issue 21).

Every test runs code in a fresh sandbox through :func:`bubblewrap.run`, the way the grader runs a
submission, and reads back what that code saw (a JSON list of what went wrong: empty when the
layer holds). A test that only inspected the grader's own settings could pass while the
sandbox leaked; these look from where an attacker stands.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from grading_helpers import ROOT, require_sandbox

from mha_helpers.grading.rules import codec
from mha_helpers.grading.sandbox import bubblewrap, cgroups, seccomp


@pytest.fixture(autouse=True)
def _needs_sandbox():
    require_sandbox()


def inside(source: str, limits: bubblewrap.Limits | None = None):
    """Run ``source`` as one cell in a fresh sandbox; it sets ``seen`` to a JSON text, which is
    returned decoded."""
    job = {
        "cells": [{"source": source}],
        "questions": [{"grade_id": "seen", "kind": "value", "expr": "seen"}],
        "cell_timeout": 25,
    }
    out = bubblewrap.run(job, limits or bubblewrap.Limits(wall_seconds=40))
    assert out.report, f"no report: {out.reason} {out.stderr}"
    error = out.report["cells"][0]["error"]
    assert error is None, error
    return json.loads(codec.decode(out.report["answers"]["seen"]["value"]))


def test_every_call_left_out_of_the_allowlist_is_refused_inside():
    """Each call of DENIED_ON_PURPOSE (keyrings, ptrace of PID 1, memfd, shared memory,
    unshare, mounts, io_uring, bpf, perf, userfaultfd, sockets...) made for real from inside:
    EPERM (ENOSYS for clone3), never the call's own error, which would mean it ran."""
    arch = platform.machine()
    numbers = {
        name: nr
        for name, nr in seccomp.DENIED_NUMBERS[arch].items()
        if name not in ("fork", "vfork", "clone")  # would really fork if the filter failed
    }
    source = textwrap.dedent(
        f"""
        import ctypes, json, errno, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        wrong = []
        # ptrace(PTRACE_ATTACH, 1): the sandbox's PID 1, whose parent-death signal an attacker
        # once cleared; the rest with small, harmless arguments.
        special = {{"ptrace": (16, 1, 0, 0), "keyctl": (0, -3, 0, 0), "unshare": (0x10000000, 0, 0, 0)}}
        for name, nr in {numbers!r}.items():
            args = special.get(name, (0, 0, 0, 0))
            ctypes.set_errno(0)
            ret = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
            err = ctypes.get_errno()
            want = errno.ENOSYS if name == "clone3" else errno.EPERM
            if ret != -1 or err != want:
                wrong.append([name, ret, errno.errorcode.get(err, err)])
        # The allowlist still lets a program work.
        if os.getpid() <= 0 or not os.urandom(4):
            wrong.append("getpid or getrandom refused")
        seen = json.dumps(wrong)
        """
    )
    assert inside(source) == []


def test_memory_paths_an_rlimit_would_not_count_are_closed_inside():
    """memfd, POSIX shared memory and SysV shared memory: the ways a submission held 2304 MiB
    against a 2048 MiB limit. Tried through Python's own APIs, as an attacker would."""
    source = textwrap.dedent(
        """
        import json, os, mmap
        held = []
        try:
            fd = os.memfd_create("x")
            os.ftruncate(fd, 2**20)
            held.append("memfd_create")
        except OSError:
            pass
        try:
            from multiprocessing import shared_memory
            shared_memory.SharedMemory(create=True, size=2**20)
            held.append("shm_open")
        except Exception:
            pass
        for path in ("/dev/shm", "/run/shm"):
            if os.path.isdir(path):
                held.append(path + " is there")
        seen = json.dumps(held)
        """
    )
    assert inside(source) == []


def test_the_cgroup_counts_memory_the_address_space_limit_allows():
    """Where the machine gives the grader a cgroup, memory is counted by it: with an address
    space limit of 2 GiB and a cgroup limit of 192 MiB, touching 512 MiB ends the sandbox."""
    if cgroups.accounting() == "rlimits":
        pytest.skip("this machine gives the grader no cgroup (the allowlist test covers it)")
    job = {
        "cells": [{"source": "import numpy as np\nblock = np.ones(512 * 2**20, dtype=np.int8)\n"}],
        "questions": [],
        "cell_timeout": 25,
    }
    limits = bubblewrap.Limits(wall_seconds=40, cgroup_memory_bytes=192 * 2**20)
    out = bubblewrap.run(job, limits)
    assert out.report is None and out.reason == "killed by SIGKILL", (out.reason, out.report)
    # The same cell with room to spare runs: it is the cgroup that stopped it.
    out = bubblewrap.run(job, bubblewrap.Limits(wall_seconds=40))
    assert out.report is not None and out.report["cells"][0]["error"] is None


def test_without_the_filter_the_namespace_layer_still_refuses_user_namespaces(monkeypatch):
    """--disable-userns holds on its own: with an allow-everything filter in place of the
    allowlist, a nested user namespace (how a submission once mounted its own tmpfs past the
    64 MiB cap) still cannot be made."""
    allow_all = seccomp._ins(seccomp._RET, 0, 0, seccomp._ALLOW)
    monkeypatch.setattr(bubblewrap, "seccomp_filter", lambda: allow_all)
    source = textwrap.dedent(
        """
        import ctypes, json
        libc = ctypes.CDLL(None, use_errno=True)
        made = libc.unshare(0x10000000)  # CLONE_NEWUSER
        seen = json.dumps(["a user namespace was made"] if made == 0 else [])
        """
    )
    assert inside(source) == []


def test_nothing_inside_shows_the_instructors_paths():
    """No /proc (no PID 1 command line, mount table or environ to read), and neither the
    environment, sys.path, the interpreter's paths nor any file the interpreter reads at start
    (.pth, editable-install hooks, direct_url.json, pyvenv.cfg) names the course folder; the
    course folder and the rest of the home folder are not there."""
    course = str(ROOT)
    home = os.path.realpath(os.path.expanduser("~"))
    source = textwrap.dedent(
        f"""
        import json, os, sys, glob
        course, home = {course!r}, {home!r}
        found = []
        for p in ("/proc/1/cmdline", "/proc/self/mountinfo", "/proc/1/environ", "/sys"):
            if os.path.exists(p):
                found.append(p + " exists")
        texts = {{"environ": repr(dict(os.environ)), "sys.path": repr(sys.path),
                  "executable": sys.executable + sys.prefix + sys.base_prefix}}
        for site in [p for p in sys.path if p.endswith("-packages")] + [sys.prefix]:
            for pattern in ("*.pth", "*.egg-link", "__editable__*", "*.dist-info/direct_url.json", "pyvenv.cfg"):
                for f in glob.glob(os.path.join(site, pattern)):
                    try:
                        texts[f] = open(f, errors="replace").read()
                    except OSError:
                        pass
        for where, text in texts.items():
            if course in text:
                found.append(where + " names the course folder")
        if os.path.exists(course):
            found.append("the course folder is there")
        if home != "/" and os.path.isdir(home):
            for name in os.listdir(home):
                path = os.path.join(home, name)
                if not any(p.startswith(path) for p in [sys.base_prefix, *sys.path]):
                    found.append(path + " from the home folder is there")
        seen = json.dumps(found)
        """
    )
    assert inside(source) == []


def _marker_alive(marker: str) -> bool:
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == marker:
                return True
        except OSError:
            pass
    return False


def _wait(condition, seconds: float = 20.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.parametrize("how", ["timeout", "grader exits", "grader gets SIGTERM"])
def test_the_sandbox_ends_whatever_its_inside_does(tmp_path, how):
    """A submission that ignores every signal it can and names itself: it is gone after its
    wall-clock limit, and when the grader exits while it runs (the grader kills its cgroup and
    its PID namespace's init, not a signal chain the inside could clear)."""
    marker = "mha" + uuid.uuid4().hex[:12]
    cell = (
        "import ctypes, signal, time\n"
        "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):\n"
        "    signal.signal(s, signal.SIG_IGN)\n"
        f"ctypes.CDLL(None).prctl(15, {marker.encode()!r}, 0, 0, 0)  # PR_SET_NAME\n"
        "while True:\n    time.sleep(0.05)\n"
    )
    wall = 8.0 if how == "timeout" else 300.0
    script = textwrap.dedent(
        f"""
        import sys, threading, time
        from concurrent.futures import ThreadPoolExecutor
        from mha_helpers.grading.classroom import commands
        from mha_helpers.grading.sandbox import bubblewrap
        job = {{"cells": [{{"source": {cell!r}}}], "questions": [], "cell_timeout": 600}}
        done = threading.Event()
        def go():
            out = bubblewrap.run(job, bubblewrap.Limits(wall_seconds={wall}, cpu_seconds=600))
            print("reason", out.reason, flush=True)
            done.set()
        how = {how!r}
        if how == "grader gets SIGTERM":  # as mha-course grade runs: a pool of workers
            commands._end_sandboxes_on_signals()
            with ThreadPoolExecutor(2) as pool:
                pool.submit(go).result()
        threading.Thread(target=go, daemon=True).start()
        if how == "grader exits":
            time.sleep(float(sys.argv[1]))
            sys.exit(0)  # the grader exits while the sandbox runs
        done.wait()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, "6"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _wait(lambda: _marker_alive(marker), 30), "the sandbox never started"
        if how == "grader gets SIGTERM":
            proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    if how == "timeout":
        assert "reason timeout" in stdout, (stdout, stderr)
    if how == "grader gets SIGTERM":
        assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, stderr[-2000:])
    assert _wait(lambda: not _marker_alive(marker), 10), "the sandbox outlived the grader"


def test_no_cgroup_is_left_behind():
    """Every run's cgroup is removed (at once, or by the next sweep), and those of a grader that
    died without cleaning up are swept when the next grader starts."""
    if cgroups.accounting() == "rlimits":
        pytest.skip("this machine gives the grader no cgroup")
    _, bases = cgroups.cgroup_parents()
    dead = subprocess.Popen(["true"])
    dead.wait()
    orphans = [Path(b) / f"mha-grade-{dead.pid}-0" for b in bases]
    for o in orphans:
        o.mkdir()
    job = {"cells": [{"source": "x = 1"}], "questions": [], "cell_timeout": 20}
    for _ in range(3):
        assert bubblewrap.run(job, bubblewrap.Limits(wall_seconds=40)).report is not None

    def ours():
        return [p for b in bases for p in Path(b).glob(f"mha-grade-{os.getpid()}-*")]

    cgroups.sweep()
    assert _wait(lambda: (cgroups.sweep() or True) and not ours(), 20), ours()
    cgroups.cgroup_parents.cache_clear()  # as a new grader does
    assert cgroups.accounting() != "rlimits"
    assert not [o for o in orphans if o.exists()]
