"""The operating-system sandbox that student code runs in, and the channel back out of it.

Each submission's program runs in :mod:`.inside.runner` inside bubblewrap (``bwrap``, the sandbox
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
* **an unprivileged uid outside, whoever grades**: :mod:`.prelude` runs between the grader
  and bubblewrap; when the grader is root it drops to :data:`DROP_UID` first, so the
  sandbox's user never maps to root and owns nothing on the machine (it reads the
  installation through the prelude's private mounts, and its device nodes are made afresh
  for each run); no call that sets a file time or an extended attribute is allowed;
* **one writable folder**, ``/sandbox``, a tmpfs capped in size and in files (``nr_inodes``,
  mounted by the prelude; bubblewrap's own, size only, where the prelude cannot);
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
untrusted data (see :mod:`.report_schema`). The hidden cases (``run(..., hidden=...)``) go in
only after the first ``result`` line has come out, so that report was made without them. Where no sandbox can be made (no ``bwrap``, macOS, a
container without user namespaces), :func:`probe` says why and grading refuses to run unless
the instructor passes ``--unsafe-no-sandbox``, which runs the same runner as a plain
subprocess with the same rlimits (and says so on every row).
"""

from __future__ import annotations

import atexit
import json
import os
import platform
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..course import PACKAGE_DIR, SELFCHECK_DATA
from ..rules import codec
from . import cgroups, process
from .limits import Limits
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
    "layout",
    "unbounded",
]

PRELUDE = Path(__file__).with_name("prelude.py")
INNER_UID = 1000  # the student's uid and gid inside the sandbox
DROP_UID = 65534  # the uid outside that a root grader's sandboxes run as ("nobody")
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
class Outcome:
    report: dict | None = None  # the parsed first ``result`` line (still untrusted)
    hidden: dict | None = None  # the parsed ``hidden`` line after it (still untrusted)
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
    stage = _stage()
    protected = _protected()
    markers = [str(p) for p in protected if p != Path("/")]
    prefix = Path(sys.prefix).resolve()
    venv = prefix if (prefix / "pyvenv.cfg").is_file() and sys.prefix != sys.base_prefix else None
    python = _python_inside(stage, venv)
    sites = _site_dirs()
    mounts, pythonpath, problems = _installation_mounts(venv, sites, protected)
    hidden = _files_naming_the_course(sites, markers, venv)
    emptied = []
    data_dir = PACKAGE_DIR / SELFCHECK_DATA
    if data_dir.is_dir() and any(_inside(data_dir.resolve(), Path(s)) for s, _ in mounts):
        emptied.append(_seen_at(data_dir.resolve(), venv))  # a regular install's self-check data
    return Layout(stage, mounts, hidden, emptied, python, pythonpath, problems)


def _stage() -> Path:
    """A private folder, removed at exit: a copy of the helper package without its self-check
    data (mounted at ``/course/mha_helpers``) and an empty file (to cover files with)."""
    stage = Path(tempfile.mkdtemp(prefix="mha-grade-stage-"))
    atexit.register(shutil.rmtree, stage, True)
    shutil.copytree(
        PACKAGE_DIR,
        stage / "mha_helpers",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "data"),
    )
    (stage / "empty").write_bytes(b"")
    _readable(stage / "mha_helpers")
    return stage


def _readable(folder: Path) -> None:
    """Folders 0755 and files 0644 below ``folder`` (a private copy), so the unprivileged uid
    a root grader's sandbox runs as can read what is bound in."""
    os.chmod(folder, 0o755)
    for base, dirs, files in os.walk(folder):
        for d in dirs:
            os.chmod(os.path.join(base, d), 0o755)
        for f in files:
            os.chmod(os.path.join(base, f), 0o644)


def _seen_at(p: Path, venv: Path | None) -> str:
    """Where a file of the installation appears inside (a venv is mounted at ``/venv``)."""
    if venv is not None and _inside(p, venv):
        return INNER_VENV + str(p)[len(str(venv)) :]
    return str(p)


def _python_inside(stage: Path, venv: Path | None) -> str:
    """The interpreter as seen inside. A venv gets a cleaned ``pyvenv.cfg`` in ``stage`` (only
    the keys the interpreter needs, none that names a folder outside)."""
    if venv is None:
        return os.path.realpath(sys.executable)
    kept = []
    for line in (venv / "pyvenv.cfg").read_text(errors="replace").splitlines():
        key = line.split("=", 1)[0].strip().lower()
        if key in ("home", "include-system-site-packages", "version", "version_info"):
            kept.append(line)
    (stage / "pyvenv.cfg").write_text("\n".join(kept) + "\n")
    os.chmod(stage / "pyvenv.cfg", 0o644)
    exe = Path(sys.executable)
    return (
        INNER_VENV + str(exe)[len(sys.prefix) :]
        if str(exe).startswith(sys.prefix.rstrip("/") + "/")
        else f"{INNER_VENV}/bin/python3"
    )


def _extra_sites() -> set:
    """Site folders on this interpreter's path that it would not find by itself (given by
    ``PYTHONPATH``, for example): the inside's ``PYTHONPATH`` lists them too."""
    own = set()
    for p in site.getsitepackages() + [site.getusersitepackages()]:
        try:
            own.add(str(Path(p).resolve()))
        except OSError:
            pass
    return {str(s) for s in _site_dirs()} - own


def _installation_mounts(venv: Path | None, sites: list, protected: list) -> tuple:
    """``(mounts, pythonpath, problems)``: the read-only mounts of the Python installation
    (a venv at ``/venv``, anything else at its own path; none that holds a protected folder,
    none inside another), what the inside's ``PYTHONPATH`` lists, and what was not mounted."""
    mounts, problems = [], []
    if venv is not None:
        mounts.append((str(venv), INNER_VENV))
    candidates = [
        sys.base_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
    ]
    if venv is None:
        candidates += [sys.prefix, sys.exec_prefix]
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    pythonpath = [INNER_PACKAGE_ROOT]
    for p in candidates + [str(s) for s in sites]:
        try:
            real = Path(p).resolve()
        except OSError:
            continue
        try:
            if not real.is_dir() or (venv is not None and _inside(real, venv)):
                continue
        except OSError:  # a folder this user cannot look into
            problems.append(f"{real} cannot be read: not mounted")
            continue
        if not _mountable(real, protected):
            problems.append(f"{real} holds the home or course folder: not mounted")
            continue
        mounts.append((str(real), str(real)))
        if user_site and real == Path(user_site).resolve():
            pythonpath.append(str(real))  # PYTHONNOUSERSITE is set inside: list it explicitly
        elif str(real) in _extra_sites():
            pythonpath.append(str(real))  # listed by PYTHONPATH (or a .pth): list it inside too
    mounts.sort(key=lambda m: len(m[1]))
    kept_mounts = []
    for src, dst in mounts:  # drop mounts inside another one (same source below)
        if not any(
            _inside(Path(src), Path(s)) and dst == d + src[len(s) :] for s, d in kept_mounts
        ):
            kept_mounts.append((src, dst))
    return kept_mounts, pythonpath, problems


def _files_naming_the_course(sites: list, markers: list, venv: Path | None) -> list:
    """Files of the installation that name the course folder (an editable install's hook, the
    path it was installed from), as seen inside: hidden, so nothing inside shows where the
    course lives."""
    hidden = []
    for sdir in sites:
        try:
            entries = list(os.scandir(sdir))
        except OSError:
            continue
        for e in entries:
            path = Path(e.path)
            if e.name.startswith("__editable__") and e.is_file():
                hidden.append(_seen_at(path, venv))  # an editable install's hook
            elif e.name.endswith((".pth", ".egg-link")):
                if e.is_file() and _names_course(path, markers):
                    hidden.append(_seen_at(path, venv))
            elif e.name.endswith(".dist-info") and e.is_dir():
                direct = path / "direct_url.json"
                if direct.is_file() and _names_course(direct, markers):
                    hidden.append(_seen_at(direct, venv))
    return hidden


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


def _sources(mpl_cache: str | None) -> list:
    """``(host path, name)`` of everything bound in from the instructor's side, in the order
    the prelude binds them into its reach folder."""
    lay = layout()
    out = [(src, f"m{i}") for i, (src, _) in enumerate(lay.mounts)]
    for name in ("pyvenv.cfg", "empty", "mha_helpers"):
        if (lay.stage / name).exists():
            out.append((str(lay.stage / name), name))
    if mpl_cache:
        out.append((mpl_cache, "mpl"))
    return out


def _bwrap_args(
    limits: Limits, mpl_cache: str | None, seccomp_fd, info_fd, reach: str | None = None
) -> list[str]:
    """bubblewrap's command line. With ``reach`` (the prelude's folder), every source from the
    instructor's side is read through it and ``/sandbox`` is the prelude's capped tmpfs."""
    lay = layout()
    names = dict(_sources(mpl_cache)) if reach else {}

    def src(path: str) -> str:
        return os.path.join(reach, names[path]) if reach and path in names else path

    args = [
        shutil.which("bwrap") or "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        # The student's uid inside is not the kernel's overflow uid (65534), which every file
        # of an unmapped owner (root's, the host's device nodes) shows inside: so "owned by me"
        # inside never looks true of a file the sandbox does not own.
        "--uid",
        str(INNER_UID),
        "--gid",
        str(INNER_UID),
    ]
    args += _system_args()
    for s, dst in lay.mounts:
        args += ["--ro-bind", src(s), dst]
    if (lay.stage / "pyvenv.cfg").is_file():
        args += ["--ro-bind", src(str(lay.stage / "pyvenv.cfg")), f"{INNER_VENV}/pyvenv.cfg"]
    for dst in lay.hidden:
        args += ["--ro-bind", src(str(lay.stage / "empty")), dst]
    for dst in lay.emptied:
        args += ["--tmpfs", dst, "--remount-ro", dst]
    args += ["--ro-bind", src(str(lay.stage / "mha_helpers")), f"{INNER_PACKAGE_ROOT}/mha_helpers"]
    if mpl_cache:
        args += ["--ro-bind", src(mpl_cache), "/mplcache"]
    own_devices = bool(reach) and os.geteuid() == 0  # the prelude made them (see there)
    for dev in ("null", "zero", "urandom", "random"):
        node = os.path.join(reach, "dev", dev) if own_devices else f"/dev/{dev}"
        args += ["--dev-bind", node, f"/dev/{dev}"]
    if reach:
        args += ["--bind", os.path.join(reach, "sandbox"), WRITABLE]
    else:
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


@lru_cache(maxsize=None)
def _reach() -> str:
    """The prelude's mount point: an empty private folder (its mounts are seen only by the
    sandboxes' own mount namespaces)."""
    folder = tempfile.mkdtemp(prefix="mha-grade-reach-")
    atexit.register(os.rmdir, folder)
    return folder


def _prelude_argv(limits, mpl_cache, seccomp_fd, info_fd, inner, cgroup, announce) -> list:
    """The command that builds the wall and becomes bubblewrap (see :mod:`.prelude`)."""
    root = os.geteuid() == 0
    tail = [layout().python, *inner]
    owner = DROP_UID if root else 0  # the tmpfs's owner, as the prelude's namespace sees it
    spec = {
        "procs": cgroup.procs_files() if cgroup is not None else [],
        "userns": not root,
        "drop": [DROP_UID, DROP_UID] if root else None,
        "reach": _reach(),
        "binds": _sources(mpl_cache),
        "tmpfs": {
            "size": int(limits.tmp_bytes),
            "inodes": int(limits.tmp_inodes),
            "uid": owner,
            "gid": owner,
        },
        "argv": _bwrap_args(limits, mpl_cache, seccomp_fd, info_fd, _reach()) + tail,
        "fallback": _bwrap_args(limits, mpl_cache, seccomp_fd, info_fd) + tail,
        "announce": announce,
        "devices": root,
    }
    return [sys.executable, "-I", "-S", str(PRELUDE), json.dumps(spec)]


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
def _probe() -> tuple[str, str] | None:
    if not sys.platform.startswith("linux"):
        return "missing", f"bubblewrap needs Linux (this is {platform.system()})"
    if shutil.which("bwrap") is None:
        return "missing", "the bwrap command (package bubblewrap) is not installed"
    if seccomp_filter() is None:
        return "failed", f"no system-call allowlist for this processor ({platform.machine()})"
    out = run({"probe": True}, Limits(wall_seconds=30), _probe_only=True)
    lines = out.stderr.splitlines()
    modes = [x.split(": ", 1)[1] for x in lines if x.startswith("mha-prelude: ")]
    _PRELUDE_MODE.append(modes[-1] if modes else "none")
    if out.report == {"probe": "sandbox works"}:
        return None
    detail = "\n".join(x for x in lines if not x.startswith("mha-prelude: ")).strip()
    return "failed", detail or out.reason or "no output"


_PRELUDE_MODE: list = []  # what the probe's prelude said: "private", or "fallback (why)"


def unbounded() -> list[str]:
    """What of the sandbox's memory is not bounded on this machine (empty when all of it is):
    with a cgroup every page is counted; without one, the prelude's tmpfs has an inode cap
    and the allowlist leaves no other path that we know of. Only where the prelude could not
    make its own mount namespace (bubblewrap's own tmpfs then has a size cap only) is
    something left."""
    if _probe() is not None or cgroups.accounting() != "rlimits":
        return []
    mode = _PRELUDE_MODE[-1] if _PRELUDE_MODE else "none"
    if mode == "private":
        return []
    return [
        "no cgroup, and the sandbox's tmpfs has no inode cap here "
        f"(the prelude: {mode}): its files and folders (about 1 KiB of kernel memory each, up "
        "to about an eighth of the machine's memory in all) are not counted by any limit"
    ]


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
    _readable(Path(folder))
    return folder


def _line(data: bytes):
    try:
        parsed = codec.loads(data)
    except codec.CodecError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _parse_stdout(out: Outcome, stdout: bytes) -> None:
    """The report is the FIRST ``result`` line (the grader sent the hidden cases only once it
    had arrived, so nothing after it may be quoted); ``hidden`` the last ``hidden`` line after
    it. Lines cut by the size cap do not parse."""
    for line in stdout.split(b"\n"):
        if line.startswith(b"step "):
            out.steps.append(line[5:200].decode("utf-8", "replace"))
        elif line.startswith(b"result ") and out.report is None:
            out.report = _line(line[7:])
            if out.report is None:
                return  # a first result line that does not parse: nothing after it counts
        elif line.startswith(b"hidden ") and out.report is not None:
            out.hidden = _line(line[7:])


def run(
    job: dict,
    limits: Limits,
    isolate: bool = True,
    mpl_cache: str | None = None,
    _probe_only=False,
    hidden: dict | None = None,
) -> Outcome:
    """Run one job in a fresh sandbox (or, with ``isolate=False``, a plain subprocess).

    ``hidden`` ({grade_id: cases}) is sent only after the run's ``result`` line has arrived,
    so the program has no hidden case in its memory while it makes anything feedback quotes."""
    job = dict(
        job,
        memory_bytes=limits.memory_bytes,
        cpu_seconds=limits.cpu_seconds,
        file_bytes=limits.file_bytes,
        mpl_cache="/mplcache" if (isolate and mpl_cache) else mpl_cache,
        phase2=bool(hidden),
    )
    payload = codec.dumps(job).encode("utf-8") + b"\n"
    second = (codec.dumps(hidden).encode("utf-8") + b"\n") if hidden else None
    out = Outcome(spawn=time.time())
    if _probe_only:
        inner = ["-c", 'print(\'result {"probe": "sandbox works"}\')']
    else:
        inner = ["-m", "mha_helpers.grading.sandbox.inside.runner"]
    if process.closing():
        rc, stdout, stderr, reason = None, b"", b"", "the grader is stopping"
    elif isolate:
        rc, stdout, stderr, reason = _run_isolated(
            payload, second, limits, mpl_cache, inner, _probe_only
        )
    else:
        rc, stdout, stderr, reason = _run_unisolated(payload, second, limits, inner)
    out.end = time.time()
    out.returncode = rc
    out.stderr = stderr.decode("utf-8", "replace")[-2000:]
    _parse_stdout(out, stdout)
    if (out.report is None or (second and out.hidden is None)) and not reason:
        reason = _why_no_result(rc, isolate)
    out.reason = reason
    return out


def _why_no_result(rc, isolate: bool) -> str:
    if isolate and rc is not None and 128 < rc < 160:
        rc = -(rc - 128)  # bwrap exits with 128 + the signal that killed the program
    if rc is not None and rc < 0:
        try:
            reason = f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            reason = f"killed by signal {-rc}"
        return "cpu-time" if reason == "killed by SIGXCPU" else reason
    if rc not in (0, None):
        return f"exited with code {rc}"
    return "no result"


def _run_isolated(payload, second, limits, mpl_cache, inner, probe_only):
    """One run in a fresh sandbox: the filter and bwrap's info on pipes, a cgroup where the
    machine gives one, the prelude (:mod:`.prelude`) becoming bwrap."""
    fds: list = []
    try:
        r, w = os.pipe()
        fds += [r, w]
        os.write(w, seccomp_filter() or b"")
        os.close(w)
        fds.remove(w)
        info_r, info_w = os.pipe()
        fds += [info_r, info_w]
        parents = None if probe_only else cgroups.cgroup_parents()
        cgroup = cgroups.make_cgroup(parents, limits) if parents else None
        argv = _prelude_argv(limits, mpl_cache, r, info_w, inner, cgroup, announce=probe_only)
        return process.run_process(
            argv,
            payload,
            limits,
            (r, info_w),
            cgroup=cgroup,
            info_r=info_r,
            second=second,
            enter=False,
        )
    finally:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass


def _run_unisolated(payload, second, limits, inner):
    with tempfile.TemporaryDirectory(prefix="mha-grade-") as tmp:
        for sub in ("work", "home", "tmp", "mpl", "ipython"):
            os.mkdir(os.path.join(tmp, sub))
        env = _inner_env(tmp, str(PACKAGE_DIR.parent))
        env["PATH"] = os.environ.get("PATH", env["PATH"])
        return process.run_process(
            [sys.executable, *inner],
            payload,
            limits,
            (),
            env,
            cwd=os.path.join(tmp, "work"),
            second=second,
        )
