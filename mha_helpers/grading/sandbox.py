"""The operating-system sandbox that student code runs in, and the channel back out of it.

Each submission's program runs in :mod:`.runner` inside bubblewrap (``bwrap``, the sandbox
Flatpak uses) with:

* new user, PID, network, IPC, UTS and cgroup namespaces (``--unshare-all``): no network, no
  other process visible or signalable (the grader included), ``--die-with-parent`` and
  ``--new-session``; all capabilities dropped;
* a new root with **read-only** views of only what the program needs: the system's ``/usr``
  (and its ``/lib``, ``/bin`` links), the Python installation and its site-packages, and the
  course's helper package mounted at ``/course/mha_helpers`` with its self-check data hidden
  under an empty tmpfs. Not mounted: the course folder (``solutions/``, the banks), the
  submissions, the gradebook and feedback folders, the home folder;
* one writable folder, ``/sandbox``, a tmpfs capped in size (work folder, home, temp files);
* limits set before any student code runs: address space (memory), CPU seconds, size of any
  file, no core dumps; and a seccomp filter that refuses every new process (``fork``, ``clone``
  without ``CLONE_THREAD``... in fact every ``clone``, so no threads either), so a fork bomb
  has nothing to multiply;
* a wall-clock limit enforced from outside: the grader kills the sandbox, and everything in its
  PID namespace dies with it.

The report comes back on the sandbox's stdout, read here with a size cap and a deadline; it is
untrusted data (see :mod:`.verdict`). Where no sandbox can be made (no ``bwrap``, macOS, a
container without user namespaces), :func:`probe` says why and grading refuses to run unless
the instructor passes ``--unsafe-no-sandbox``, which runs the same runner as a plain
subprocess with the same limits (and says so on every row).
"""

from __future__ import annotations

import os
import platform
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import codec
from .course import PACKAGE_DIR

__all__ = ["Limits", "Outcome", "run", "probe", "sandbox_help", "SANDBOX_HELP", "warm_matplotlib"]

INNER_PACKAGE_ROOT = "/course"  # the helper package appears as /course/mha_helpers
WRITABLE = "/sandbox"

SANDBOX_HELP = """\
Grading runs every submission in an operating-system sandbox (bubblewrap), and none could be
made on this machine: {reason}

How to get one:
  - Debian / Ubuntu: sudo apt install bubblewrap      Fedora: sudo dnf install bubblewrap
  - Ubuntu 24.04 and later restrict unprivileged user namespaces with AppArmor; allow them
    for bwrap (an AppArmor profile) or: sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0
  - In a container (Docker, Podman, a CI runner), user namespaces must be allowed, e.g.
    docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined ...
  - macOS and Windows have no bubblewrap: grade inside a Linux virtual machine or container
    (for example a Debian image with bubblewrap installed).

To grade without isolation anyway, pass --unsafe-no-sandbox. Student code then runs with your
permissions and can read your files, including the solutions: use it only for submissions you
trust."""


@dataclass
class Limits:
    memory_bytes: int = 2 * 2**30
    cpu_seconds: int = 65
    file_bytes: int = 32 * 2**20  # any one file the program writes
    tmp_bytes: int = 64 * 2**20  # all of /sandbox together
    wall_seconds: float = 60.0
    report_bytes: int = 16 * 2**20


@dataclass
class Outcome:
    report: dict | None = None  # the parsed ``result`` line (still untrusted)
    steps: list = field(default_factory=list)  # the ``step`` lines, in order
    reason: str = ""  # why there is no report: "timeout", "killed by SIGKILL", ...
    returncode: int | None = None
    spawn: float = 0.0
    end: float = 0.0
    stderr: str = ""


# --- seccomp: no new processes ---------------------------------------------------------------

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# System calls that create processes or threads, by architecture (unistd.h).
_PROCESS_CALLS = {
    "x86_64": {"clone": 56, "fork": 57, "vfork": 58, "clone3": 435},
    "aarch64": {"clone": 220, "clone3": 435},
}


def seccomp_filter() -> bytes | None:
    """A classic-BPF seccomp program that makes every process-creating system call fail with
    EPERM (``clone3`` with ENOSYS, so C libraries fall back to ``clone``), or ``None`` on an
    architecture this table does not know."""
    arch = platform.machine()
    if arch not in _AUDIT_ARCH:
        return None
    ld_abs, jeq, ret = 0x20, 0x15, 0x06
    allow, errno, kill = 0x7FFF0000, 0x00050000, 0x80000000
    eperm, enosys = 1, 38

    def ins(code, jt, jf, k):
        return struct.pack("=HBBI", code, jt, jf, k)

    prog = [
        ins(ld_abs, 0, 0, 4),  # seccomp_data.arch
        ins(jeq, 1, 0, _AUDIT_ARCH[arch]),
        ins(ret, 0, 0, kill),  # another ABI (32-bit calls on x86_64): refuse outright
        ins(ld_abs, 0, 0, 0),
    ]  # seccomp_data.nr
    if arch == "x86_64":  # the x32 ABI sets bit 30 of the call number
        prog += [ins(0x45, 0, 1, 0x40000000), ins(ret, 0, 0, kill)]  # jset
    for name, nr in _PROCESS_CALLS[arch].items():
        prog += [
            ins(jeq, 0, 1, nr),
            ins(ret, 0, 0, errno | (enosys if name == "clone3" else eperm)),
        ]
    prog.append(ins(ret, 0, 0, allow))
    return b"".join(prog)


# --- what the sandbox sees -------------------------------------------------------------------


def _python_paths() -> list[str]:
    """Folders of the Python installation and its packages: the prefixes, and the ``sys.path``
    entries that are package folders (``site-packages``, ``dist-packages``). Never the course
    folder, the current folder or anything else that happens to be on ``sys.path``."""
    course = PACKAGE_DIR.parent.resolve()
    candidates = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
    ]
    candidates += [
        p for p in sys.path if p and {"site-packages", "dist-packages"} & set(Path(p).parts)
    ]
    found = []
    for p in candidates:
        try:
            real = Path(p).resolve()
        except OSError:
            continue
        if not real.is_dir() or real == Path("/") or real == course or real in course.parents:
            continue  # the course folder (or above it): only the package is mounted
        found.append(str(real))
    found.sort(key=len)
    kept = []
    for p in found:
        if not any(p == k or p.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(p)
    return kept


def _system_args() -> list[str]:
    args = []
    for d in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for f in ("/etc/ld.so.cache", "/etc/localtime"):
        if os.path.exists(f):
            args += ["--ro-bind", f, f]
    return args


def _bwrap_args(limits: Limits, mpl_cache: str | None, seccomp_fd: int | None) -> list[str]:
    bwrap = shutil.which("bwrap")
    data_dir = PACKAGE_DIR / "grading" / "data"
    args = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        "65534",
        "--gid",
        "65534",
    ]
    args += _system_args()
    for p in _python_paths():
        args += ["--ro-bind", p, p]
    inner_pkg = f"{INNER_PACKAGE_ROOT}/mha_helpers"
    args += ["--ro-bind", str(PACKAGE_DIR), inner_pkg]
    if data_dir.is_dir():  # the self-check data: not for student code
        args += ["--tmpfs", f"{inner_pkg}/grading/data"]
        if any(str(data_dir).startswith(p.rstrip("/") + "/") for p in _python_paths()):
            args += ["--tmpfs", str(data_dir)]
    if mpl_cache:
        args += ["--ro-bind", mpl_cache, "/mplcache"]
    args += ["--proc", "/proc"]
    for dev in ("null", "zero", "urandom", "random"):
        args += ["--dev-bind", f"/dev/{dev}", f"/dev/{dev}"]
    args += ["--size", str(int(limits.tmp_bytes)), "--tmpfs", WRITABLE]
    for sub in ("work", "home", "tmp", "mpl", "ipython"):
        args += ["--dir", f"{WRITABLE}/{sub}"]
    args += ["--remount-ro", "/", "--chdir", f"{WRITABLE}/work", "--clearenv"]
    for key, value in _inner_env(f"{WRITABLE}", INNER_PACKAGE_ROOT).items():
        args += ["--setenv", key, value]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    return args


def _inner_env(writable: str, package_root: str) -> dict:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": f"{writable}/home",
        "TMPDIR": f"{writable}/tmp",
        "MPLCONFIGDIR": f"{writable}/mpl",
        "MPLBACKEND": "Agg",
        "IPYTHONDIR": f"{writable}/ipython",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONPATH": package_root,
        "LANG": "C.UTF-8",
        "MHA_COURSE_GRADING": "1",
    }


@lru_cache(maxsize=None)
def probe() -> str | None:
    """``None`` when a sandbox can be made here, else the reason it cannot."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux (this is {platform.system()})"
    if shutil.which("bwrap") is None:
        return "the bwrap command (package bubblewrap) is not installed"
    out = _run_process(
        _bwrap_args(Limits(), None, None) + [sys.executable, "-c", "print('sandbox works')"],
        b"",
        Limits(wall_seconds=30),
        pass_fds=(),
    )
    if out[0] is not None and b"sandbox works" in out[1]:
        return None
    detail = out[2].decode("utf-8", "replace").strip().splitlines()
    return f"bwrap failed ({detail[-1] if detail else out[3] or 'no output'})"


def sandbox_help(reason: str) -> str:
    return SANDBOX_HELP.format(reason=reason)


# --- running ---------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def warm_matplotlib() -> str | None:
    """Build matplotlib's font list once per process, outside the sandboxes, into a private
    folder removed at exit; each sandbox starts from a copy (a submission that plots then does
    not spend seconds scanning fonts)."""
    import atexit

    folder = tempfile.mkdtemp(prefix="mha-grade-mpl-")
    atexit.register(shutil.rmtree, folder, True)
    try:
        subprocess.run(
            [sys.executable, "-c", "import matplotlib.font_manager"],
            timeout=120,
            env=dict(os.environ, MPLCONFIGDIR=folder, MPLBACKEND="Agg"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=folder,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return folder


def _run_process(argv, stdin: bytes, limits: Limits, pass_fds=(), env=None, cwd=None):
    """Run, feed stdin, read stdout/stderr with caps until exit or the deadline.
    Returns ``(returncode or None on timeout, stdout, stderr, reason)``."""
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
            env=env if env is not None else _outer_env(),
        )
    except OSError as exc:
        return None, b"", str(exc).encode(), f"could not start: {exc}"
    deadline = time.monotonic() + limits.wall_seconds
    caps = {proc.stdout: limits.report_bytes, proc.stderr: 64 * 1024}
    chunks = {proc.stdout: [], proc.stderr: []}
    sizes = {proc.stdout: 0, proc.stderr: 0}
    reason = ""
    try:
        try:
            proc.stdin.write(stdin)
        except (BrokenPipeError, OSError):
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
        sel = selectors.DefaultSelector()
        for f in (proc.stdout, proc.stderr):
            os.set_blocking(f.fileno(), False)
            sel.register(f, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                reason = "timeout"
                break
            for key, _ in sel.select(timeout=min(left, 1.0)):
                f = key.fileobj
                try:
                    data = os.read(f.fileno(), 65536)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(f)
                    continue
                if sizes[f] < caps[f]:
                    chunks[f].append(data[: caps[f] - sizes[f]])
                sizes[f] += len(data)
        sel.close()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for f in (proc.stdout, proc.stderr):
            f.close()
    if sizes[proc.stdout] > caps[proc.stdout]:
        reason = reason or "report too large"
    rc = None if reason == "timeout" else proc.returncode
    return rc, b"".join(chunks[proc.stdout]), b"".join(chunks[proc.stderr]), reason


def _outer_env() -> dict:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def run(job: dict, limits: Limits, isolate: bool = True, mpl_cache: str | None = None) -> Outcome:
    """Run one job in a fresh sandbox (or, with ``isolate=False``, a plain subprocess)."""
    job = dict(
        job,
        memory_bytes=limits.memory_bytes,
        cpu_seconds=limits.cpu_seconds,
        file_bytes=limits.file_bytes,
        mpl_cache="/mplcache" if (isolate and mpl_cache) else mpl_cache,
    )
    payload = codec.dumps(job).encode("utf-8")
    out = Outcome(spawn=time.time())
    runner = [sys.executable, "-m", "mha_helpers.grading.runner"]
    if isolate:
        program = seccomp_filter()
        r = w = None
        pass_fds: tuple = ()
        if program is not None:
            r, w = os.pipe()
            os.write(w, program)
            os.close(w)
            pass_fds = (r,)
        try:
            argv = _bwrap_args(limits, mpl_cache, r) + runner
            rc, stdout, stderr, reason = _run_process(argv, payload, limits, pass_fds)
        finally:
            if r is not None:
                os.close(r)
    else:
        with tempfile.TemporaryDirectory(prefix="mha-grade-") as tmp:
            for sub in ("work", "home", "tmp", "mpl", "ipython"):
                os.mkdir(os.path.join(tmp, sub))
            env = _inner_env(tmp, str(PACKAGE_DIR.parent))
            env["PATH"] = os.environ.get("PATH", env["PATH"])
            rc, stdout, stderr, reason = _run_process(
                runner, payload, limits, (), env, cwd=os.path.join(tmp, "work")
            )
    out.end = time.time()
    out.returncode = rc
    out.stderr = stderr.decode("utf-8", "replace")[-2000:]
    for line in stdout.split(b"\n"):
        if line.startswith(b"step "):
            out.steps.append(line[5:200].decode("utf-8", "replace"))
        elif line.startswith(b"result "):  # the runner's own is the last line it writes
            try:
                report = codec.loads(line[7:])
                out.report = report if isinstance(report, dict) else None
            except codec.CodecError:
                out.report = None
    if out.report is None and not reason:
        if rc is not None and rc < 0:
            try:
                reason = f"killed by {signal.Signals(-rc).name}"
            except ValueError:
                reason = f"killed by signal {-rc}"
            if reason == "killed by SIGXCPU":
                reason = "cpu-time"
        elif rc not in (0, None):
            reason = f"exited with code {rc}"
        else:
            reason = "no result"
    out.reason = reason
    return out
