"""The operating-system sandbox that student code runs in, and the channel back out of it.

Each submission's program runs in :mod:`.runner` inside bubblewrap (``bwrap``, the sandbox
Flatpak uses). What each layer guarantees (the instructor guide's threat model says the same,
and what each does not):

* **namespaces** (``--unshare-all``, ``--disable-userns``): no network, no other process
  visible or signalable (the grader included), no new user namespace inside (so no private
  mounts or tmpfs of its own), ``--new-session``, all capabilities dropped;
* **a new root with read-only views of only what the interpreter needs**: the system's
  ``/usr`` (and its ``/lib``, ``/bin`` links), the Python installation wherever it lives (a
  venv is mounted at ``/venv`` with a cleaned ``pyvenv.cfg``; a conda env, a pyenv or system
  install and the user site-packages at their own paths, never the home folder or the course
  folder that holds them), and a private copy of the helper package at ``/course/mha_helpers``
  without its self-check data. Files of the installation that name the course folder
  (editable-install hooks, ``direct_url.json``) are hidden. No ``/proc`` and no ``/sys``: no
  process's command line, mount table or environment to read;
* **one writable folder**, ``/sandbox``, a tmpfs capped in size;
* **a default-deny system-call allowlist** (:mod:`.seccomp`): moby's default profile minus
  processes and threads, keyrings, ``ptrace``, shared memory, namespaces and mounts,
  ``io_uring``, ``bpf``, ``perf_event_open``, ``userfaultfd`` and sockets;
* **limits**: address space, CPU seconds, file size, open files and no core dumps (rlimits set
  by the runner before any student code runs) and, where the machine lets the grader make one,
  **a cgroup** (v2 ``memory.max``/``pids.max``, or the v1 memory and pids controllers) that
  counts every page the sandbox uses, shared memory and tmpfs included;
* **an end the inside cannot prevent**: on the wall-clock limit, at the end of every run and
  at the grader's exit, the grader kills the cgroup (``cgroup.kill``, or every process in it)
  and the sandbox's PID 1 through a pidfd (when a PID namespace's init dies, the kernel kills
  everything in it), besides bubblewrap's own process group.

The report comes back on the sandbox's stdout, read here with a size cap and a deadline; it is
untrusted data (see :mod:`.verdict`). Where no sandbox can be made (no ``bwrap``, macOS, a
container without user namespaces), :func:`probe` says why and grading refuses to run unless
the instructor passes ``--unsafe-no-sandbox``, which runs the same runner as a plain
subprocess with the same rlimits (and says so on every row).
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import platform
import selectors
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..course import PACKAGE_DIR, SELFCHECK_DATA
from ..rules import codec
from .seccomp import seccomp_program

__all__ = [
    "Limits",
    "Outcome",
    "run",
    "probe",
    "sandbox_help",
    "SANDBOX_HELP",
    "BWRAP_FAILED_HELP",
    "warm_matplotlib",
    "accounting",
    "kill_all",
]

INNER_PACKAGE_ROOT = "/course"  # the helper package appears as /course/mha_helpers
INNER_VENV = "/venv"
WRITABLE = "/sandbox"

SANDBOX_HELP = """\
Grading runs every submission in an operating-system sandbox (bubblewrap), and none could be
made on this machine: {reason}

How to get one:
  - Debian / Ubuntu: sudo apt install bubblewrap      Fedora: sudo dnf install bubblewrap
  - macOS and Windows have no bubblewrap: grade inside a Linux virtual machine or container
    (for example a Debian image with bubblewrap installed).

To grade without isolation anyway, pass --unsafe-no-sandbox. Student code then runs with your
permissions and can read your files, including the solutions: use it only for submissions you
trust."""

BWRAP_FAILED_HELP = """\
bubblewrap's own error:
{error}

bwrap is installed ({bwrap}) but could not start the grading sandbox: {reason}

Common causes:
  - Ubuntu 24.04 and later restrict unprivileged user namespaces with AppArmor; allow them
    for bwrap (an AppArmor profile) or: sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0
  - In a container (Docker, Podman, a CI runner), user namespaces must be allowed, e.g.
    docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined ...
  - An old bubblewrap without --disable-userns (it needs version 0.8 or later).

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
    pids: int = 16  # processes and threads in the cgroup (bwrap, its init, the runner)
    cgroup_memory_bytes: int | None = None  # default: memory_bytes + tmp_bytes


@dataclass
class Outcome:
    report: dict | None = None  # the parsed ``result`` line (still untrusted)
    steps: list = field(default_factory=list)  # the ``step`` lines, in order
    reason: str = ""  # why there is no report: "timeout", "killed by SIGKILL", ...
    returncode: int | None = None
    spawn: float = 0.0
    end: float = 0.0
    stderr: str = ""


def seccomp_filter() -> bytes | None:
    """The sandbox's system-call filter for this machine (see :mod:`.seccomp`)."""
    return seccomp_program()


# --- what the sandbox sees -------------------------------------------------------------------


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _protected() -> list[Path]:
    """Folders no mount may contain: the home folder, the course folder the package came from
    (an editable install or a course checkout) and the course in the current directory."""
    out = []
    home = os.environ.get("HOME") or os.path.expanduser("~")
    for p in (home, PACKAGE_DIR.parent):
        try:
            out.append(Path(p).resolve())
        except OSError:
            pass
    try:
        from ..course import find_course

        out.append(find_course(None).root.resolve())
    except Exception:
        pass
    return [p for p in out if p != Path("/")]


def _mountable(path: Path, protected: list[Path]) -> bool:
    """A folder may be mounted when it holds none of the protected folders (it may be inside
    one: a venv in the home folder exposes the venv, not the rest of the home folder)."""
    return path != Path("/") and not any(_inside(p, path) for p in protected)


@dataclass
class Layout:
    stage: Path  # private folder: the package copy, a cleaned pyvenv.cfg, an empty file
    mounts: list  # (source, destination) read-only binds
    hidden: list  # destinations to cover with an empty file
    emptied: list  # destinations to cover with an empty tmpfs
    python: str  # the interpreter, as seen inside
    pythonpath: list  # what the inside's PYTHONPATH lists
    problems: list  # what could not be mounted, and why


def _site_dirs() -> list[Path]:
    out = []
    for p in sys.path:
        if p and {"site-packages", "dist-packages"} & set(Path(p).parts):
            try:
                real = Path(p).resolve()
            except OSError:
                continue
            if real.is_dir():
                out.append(real)
    return out


def _names_course(path: Path, markers: list[str]) -> bool:
    try:
        with open(path, "rb") as f:
            text = f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return False
    return any(m in text for m in markers)


@lru_cache(maxsize=None)
def layout() -> Layout:
    """Work out, once per process, what the sandbox mounts for this interpreter."""
    stage = Path(tempfile.mkdtemp(prefix="mha-grade-stage-"))
    atexit.register(shutil.rmtree, stage, True)
    shutil.copytree(
        PACKAGE_DIR,
        stage / "mha_helpers",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "data"),
    )
    (stage / "empty").write_bytes(b"")
    protected = _protected()
    markers = [str(p) for p in protected if p != Path("/")]
    mounts, hidden, emptied, problems = [], [], [], []
    prefix = Path(sys.prefix).resolve()
    venv = prefix if (prefix / "pyvenv.cfg").is_file() and sys.prefix != sys.base_prefix else None

    def dest(p: Path) -> str:
        if venv is not None and _inside(p, venv):
            return INNER_VENV + str(p)[len(str(venv)) :]
        return str(p)

    if venv is not None:
        mounts.append((str(venv), INNER_VENV))
        kept = []
        for line in (venv / "pyvenv.cfg").read_text(errors="replace").splitlines():
            key = line.split("=", 1)[0].strip().lower()
            if key in ("home", "include-system-site-packages", "version", "version_info"):
                kept.append(line)
        (stage / "pyvenv.cfg").write_text("\n".join(kept) + "\n")
        exe = Path(sys.executable)
        python = (
            INNER_VENV + str(exe)[len(sys.prefix) :]
            if str(exe).startswith(sys.prefix.rstrip("/") + "/")
            else f"{INNER_VENV}/bin/python3"
        )
    else:
        python = os.path.realpath(sys.executable)
    candidates = [
        sys.base_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
    ]
    if venv is None:
        candidates += [sys.prefix, sys.exec_prefix]
    sites = _site_dirs()
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    pythonpath = [INNER_PACKAGE_ROOT]
    for p in candidates + [str(s) for s in sites]:
        try:
            real = Path(p).resolve()
        except OSError:
            continue
        if not real.is_dir() or (venv is not None and _inside(real, venv)):
            continue
        if not _mountable(real, protected):
            problems.append(f"{real} holds the home or course folder: not mounted")
            continue
        mounts.append((str(real), str(real)))
        if user_site and real == Path(user_site).resolve():
            pythonpath.append(str(real))  # PYTHONNOUSERSITE is set inside: list it explicitly
    mounts.sort(key=lambda m: len(m[1]))
    kept_mounts = []
    for src, dst in mounts:  # drop mounts inside another one (same source below)
        if not any(
            _inside(Path(src), Path(s)) and dst == d + src[len(s) :] for s, d in kept_mounts
        ):
            kept_mounts.append((src, dst))
    # Files of the installation that name the course folder (an editable install's hook, the
    # path it was installed from): hidden, so nothing inside shows where the course lives.
    for sdir in sites:
        try:
            entries = list(os.scandir(sdir))
        except OSError:
            continue
        for e in entries:
            path = Path(e.path)
            if e.name.startswith("__editable__") and e.is_file():
                hidden.append(dest(path))  # an editable install's hook: it names the course
            elif e.name.endswith((".pth", ".egg-link")):
                if e.is_file() and _names_course(path, markers):
                    hidden.append(dest(path))
            elif e.name.endswith(".dist-info") and e.is_dir():
                direct = path / "direct_url.json"
                if direct.is_file() and _names_course(direct, markers):
                    hidden.append(dest(direct))
    data_dir = PACKAGE_DIR / SELFCHECK_DATA
    if data_dir.is_dir() and any(_inside(data_dir.resolve(), Path(s)) for s, _ in kept_mounts):
        emptied.append(dest(data_dir.resolve()))  # a regular install: its self-check data
    return Layout(stage, kept_mounts, hidden, emptied, python, pythonpath, problems)


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


def _bwrap_args(limits: Limits, mpl_cache: str | None, seccomp_fd, info_fd) -> list[str]:
    lay = layout()
    args = [
        shutil.which("bwrap") or "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
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
    for src, dst in lay.mounts:
        args += ["--ro-bind", src, dst]
    if (lay.stage / "pyvenv.cfg").is_file():
        args += ["--ro-bind", str(lay.stage / "pyvenv.cfg"), f"{INNER_VENV}/pyvenv.cfg"]
    for dst in lay.hidden:
        args += ["--ro-bind", str(lay.stage / "empty"), dst]
    for dst in lay.emptied:
        args += ["--tmpfs", dst, "--remount-ro", dst]
    args += ["--ro-bind", str(lay.stage / "mha_helpers"), f"{INNER_PACKAGE_ROOT}/mha_helpers"]
    if mpl_cache:
        args += ["--ro-bind", mpl_cache, "/mplcache"]
    for dev in ("null", "zero", "urandom", "random"):
        args += ["--dev-bind", f"/dev/{dev}", f"/dev/{dev}"]
    args += ["--size", str(int(limits.tmp_bytes)), "--tmpfs", WRITABLE]
    for sub in ("work", "home", "tmp", "mpl", "ipython"):
        args += ["--dir", f"{WRITABLE}/{sub}"]
    args += ["--remount-ro", "/", "--chdir", f"{WRITABLE}/work", "--clearenv"]
    env = _inner_env(WRITABLE, INNER_PACKAGE_ROOT)
    env["PYTHONPATH"] = ":".join(lay.pythonpath)
    for key, value in env.items():
        args += ["--setenv", key, value]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
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


# --- cgroups ---------------------------------------------------------------------------------


def _mounts_of(fstype: str) -> list[tuple[str, set]]:
    """(mount point, super options) of every mount of ``fstype`` (``cgroup`` or ``cgroup2``)."""
    out = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                parts, rparts = left.split(), right.split()
                if len(parts) > 4 and len(rparts) > 2 and rparts[0] == fstype:
                    out.append((parts[4].replace("\\040", " "), set(rparts[2].split(","))))
    except OSError:
        pass
    return out


def _own_cgroups() -> dict:
    """{controller or "" for v2: path} from /proc/self/cgroup."""
    out = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for c in controllers.split(",") if controllers else [""]:
                    out[c] = path
    except (OSError, ValueError):
        pass
    return out


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


class Cgroup:
    """One sandbox's cgroup (v2: one folder; v1: one folder per controller)."""

    def __init__(self, kind: str, folders: list[Path]):
        self.kind, self.folders = kind, folders

    def procs_files(self) -> list[str]:
        return [str(f / "cgroup.procs") for f in self.folders]

    def kill(self) -> None:
        first = self.folders[0]
        if self.kind == "v2" and (first / "cgroup.kill").exists():
            try:
                _write(first / "cgroup.kill", "1")
                return
            except OSError:
                pass
        for _ in range(50):  # nothing inside can create processes, so this converges
            pids = set()
            for f in self.procs_files():
                try:
                    pids |= {int(x) for x in Path(f).read_text().split()}
                except (OSError, ValueError):
                    pass
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.01)

    def remove(self, tries: int = 20) -> bool:
        """Remove the folders (once their processes are gone); False when one is still busy,
        in which case it is kept for a later sweep (:func:`_sweep`)."""
        left = []
        for folder in self.folders:
            for attempt in range(tries):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if attempt + 1 == tries:
                        left.append(folder)
                    else:
                        time.sleep(0.01)
        if left:
            with _STALE_LOCK:
                _STALE.append(Cgroup(self.kind, left))
        return not left


_STALE: list = []  # cgroups whose processes were still exiting when their run ended
_STALE_LOCK = threading.Lock()


def _sweep(bases=()) -> None:
    """Remove cgroups left behind: this process's (their processes have exited by now) and
    those of graders that are no longer running (a grader killed with SIGKILL)."""
    with _STALE_LOCK:
        stale, _STALE[:] = list(_STALE), []
    for cg in stale:
        cg.kill()
        cg.remove(tries=1)
    for base in bases:
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for e in entries:
            parts = e.name.split("-")
            if len(parts) != 4 or parts[:2] != ["mha", "grade"] or not parts[2].isdigit():
                continue
            pid = int(parts[2])
            if pid == os.getpid() or os.path.exists(f"/proc/{pid}"):
                continue  # ours (handled above) or a grader still running
            try:
                os.rmdir(e.path)
            except OSError:
                pass


_COUNTER = itertools.count()


def _parents() -> tuple[str, list[Path]] | None:
    """Where this process may make cgroups, and of which kind, or None."""
    own = _own_cgroups()
    for mnt, _ in _mounts_of("cgroup2"):
        base = Path(mnt + own.get("", "/").rstrip("/")) if "" in own else None
        if base is None or not base.is_dir():
            continue
        try:
            controllers = set((base / "cgroup.controllers").read_text().split())
            if not {"memory", "pids"} <= controllers:
                continue
            enabled = set((base / "cgroup.subtree_control").read_text().split())
            if not {"memory", "pids"} <= enabled:
                _write(base / "cgroup.subtree_control", "+memory +pids")
            return "v2", [base]
        except OSError:
            continue
    folders = []
    v1 = _mounts_of("cgroup")
    for controller in ("memory", "pids"):
        mnt = next((m for m, opts in v1 if controller in opts), None)
        if mnt is None:
            return None
        path = own.get(controller, "/")
        base = Path(mnt + path.rstrip("/"))
        folders.append(base if base.is_dir() else Path(mnt))
    return "v1", folders


def _make_cgroup(parents, limits: Limits) -> Cgroup | None:
    kind, bases = parents
    if _STALE:
        _sweep()
    name = f"mha-grade-{os.getpid()}-{next(_COUNTER)}"
    made: list[Path] = []
    try:
        for base in bases:
            folder = base / name
            folder.mkdir()
            made.append(folder)
        memory = str(int(limits.cgroup_memory_bytes or limits.memory_bytes + limits.tmp_bytes))
        if kind == "v2":
            _write(made[0] / "memory.max", memory)
            if (made[0] / "memory.swap.max").exists():
                _write(made[0] / "memory.swap.max", "0")
            _write(made[0] / "pids.max", str(limits.pids))
        else:
            _write(made[0] / "memory.limit_in_bytes", memory)
            try:
                _write(made[0] / "memory.memsw.limit_in_bytes", memory)
            except OSError:
                pass  # no swap accounting on this kernel
            _write(made[1] / "pids.max", str(limits.pids))
    except OSError:
        Cgroup(kind, made).remove()
        return None
    return Cgroup(kind, made)


@lru_cache(maxsize=None)
def _cgroup_parents():
    """Detect once whether sandboxes get cgroups here: make one, move a process into it."""
    parents = _parents()
    if parents is None:
        return None
    _sweep(parents[1])
    cg = _make_cgroup(parents, Limits())
    if cg is None:
        return None
    try:
        proc = subprocess.run(
            ["/bin/sh", "-c", _ENTER, "sh", *cg.procs_files(), "--", "/bin/true"],
            capture_output=True,
            timeout=10,
        )
        ok = proc.returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    cg.kill()
    cg.remove()
    return parents if ok else None


# Moves the shell into each cgroup given before "--", then becomes the command after it.
_ENTER = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


def accounting() -> str:
    """How the sandbox's memory is accounted here: "cgroup v2", "cgroup v1" or "rlimits"."""
    if not sys.platform.startswith("linux"):
        return "rlimits"
    parents = _cgroup_parents()
    return f"cgroup {parents[0]}" if parents else "rlimits"


# --- ending sandboxes ------------------------------------------------------------------------

_LIVE: dict = {}
_LIVE_LOCK = threading.Lock()
_CLOSING = threading.Event()


class _Handle:
    """Everything needed to end one running sandbox, whatever its inside did."""

    def __init__(self, proc, cgroup: Cgroup | None):
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
    if _STALE:
        _sweep()


atexit.register(kill_all)
try:  # before the interpreter waits for worker threads, which may be inside a sandbox
    threading._register_atexit(kill_all)
except (AttributeError, RuntimeError):
    pass


@lru_cache(maxsize=None)
def _probe() -> tuple[str, str] | None:
    if not sys.platform.startswith("linux"):
        return "missing", f"bubblewrap needs Linux (this is {platform.system()})"
    if shutil.which("bwrap") is None:
        return "missing", "the bwrap command (package bubblewrap) is not installed"
    if seccomp_filter() is None:
        return "failed", f"no system-call allowlist for this processor ({platform.machine()})"
    out = run({"probe": True}, Limits(wall_seconds=30), _probe_only=True)
    if out.report == {"probe": "sandbox works"}:
        return None
    detail = out.stderr.strip() or out.reason or "no output"
    return "failed", detail


def probe() -> str | None:
    """``None`` when a sandbox can be made here, else the reason it cannot (for a bwrap that
    exists but fails, bubblewrap's own error comes first)."""
    found = _probe()
    if found is None:
        return None
    kind, detail = found
    if kind == "missing":
        return detail
    return f"bwrap failed: {detail.splitlines()[-1] if detail else 'no output'}"


def sandbox_help(reason: str | None = None) -> str:
    """What to tell the instructor: install bubblewrap when it is missing; when it is there but
    fails, bubblewrap's own error first, then what usually causes it."""
    found = _probe()
    if found is not None and found[0] == "failed":
        return BWRAP_FAILED_HELP.format(
            error=found[1][-2000:], bwrap=shutil.which("bwrap"), reason=reason or probe()
        )
    return SANDBOX_HELP.format(reason=reason or probe())


# --- running ---------------------------------------------------------------------------------
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


def _run_process(
    argv, stdin: bytes, limits: Limits, pass_fds=(), env=None, cwd=None, cgroup=None, info_r=None
):
    """Run, feed stdin, read stdout/stderr with caps until exit or the deadline, then end
    everything the run started (see :class:`_Handle`).
    Returns ``(returncode or None on timeout, stdout, stderr, reason)``."""
    if cgroup is not None:
        argv = ["/bin/sh", "-c", _ENTER, "sh", *cgroup.procs_files(), "--", *argv]
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
    handle = _Handle(proc, cgroup)
    key = id(handle)
    with _LIVE_LOCK:
        _LIVE[key] = handle
    if _CLOSING.is_set():
        handle.kill()
    deadline = time.monotonic() + limits.wall_seconds
    caps = {proc.stdout: limits.report_bytes, proc.stderr: 64 * 1024}
    chunks = {proc.stdout: [], proc.stderr: []}
    sizes = {proc.stdout: 0, proc.stderr: 0}
    info = bytearray()
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
                        handle.pidfd = _pidfd_from_info(bytes(info))
                    continue
                if not data:
                    sel.unregister(f)
                    continue
                if sizes[f] < caps[f]:
                    chunks[f].append(data[: caps[f] - sizes[f]])
                sizes[f] += len(data)
        if handle.pidfd is None and info:
            handle.pidfd = _pidfd_from_info(bytes(info))
        sel.close()
    finally:
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
    if sizes[proc.stdout] > caps[proc.stdout]:
        reason = reason or "report too large"
    rc = None if reason == "timeout" else proc.returncode
    if cgroup is not None and rc == 125 and not chunks[proc.stdout]:
        reason = reason or "could not enter the sandbox's cgroup"
    return rc, b"".join(chunks[proc.stdout]), b"".join(chunks[proc.stderr]), reason


def _pidfd_from_info(info: bytes):
    """A pidfd of the sandbox's PID 1 from bwrap's ``--info-fd`` JSON (taken while the sandbox
    runs, so a recycled PID can never be signalled by mistake), or None."""
    try:
        pid = int(json.loads(info.decode("utf-8", "replace").strip() or "{}")["child-pid"])
        return os.pidfd_open(pid)
    except (ValueError, KeyError, TypeError, OSError, AttributeError):
        return None


def _outer_env() -> dict:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def run(
    job: dict, limits: Limits, isolate: bool = True, mpl_cache: str | None = None, _probe_only=False
) -> Outcome:
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
    if _probe_only:
        inner = ["-c", 'print(\'result {"probe": "sandbox works"}\')']
    else:
        inner = ["-m", "mha_helpers.grading.sandbox.inside.runner"]
    if _CLOSING.is_set():
        rc, stdout, stderr, reason = None, b"", b"", "the grader is stopping"
    elif isolate:
        program = seccomp_filter()
        fds: list = []
        try:
            r, w = os.pipe()
            fds += [r, w]
            os.write(w, program or b"")
            os.close(w)
            fds.remove(w)
            info_r, info_w = os.pipe()
            fds += [info_r, info_w]
            parents = None if _probe_only else _cgroup_parents()
            cgroup = _make_cgroup(parents, limits) if parents else None
            argv = _bwrap_args(limits, mpl_cache, r, info_w) + [layout().python, *inner]
            rc, stdout, stderr, reason = _run_process(
                argv, payload, limits, (r, info_w), cgroup=cgroup, info_r=info_r
            )
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
    else:
        with tempfile.TemporaryDirectory(prefix="mha-grade-") as tmp:
            for sub in ("work", "home", "tmp", "mpl", "ipython"):
                os.mkdir(os.path.join(tmp, sub))
            env = _inner_env(tmp, str(PACKAGE_DIR.parent))
            env["PATH"] = os.environ.get("PATH", env["PATH"])
            rc, stdout, stderr, reason = _run_process(
                [sys.executable, *inner], payload, limits, (), env, cwd=os.path.join(tmp, "work")
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
        if isolate and rc is not None and 128 < rc < 160:
            rc = -(rc - 128)  # bwrap exits with 128 + the signal that killed the program
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
