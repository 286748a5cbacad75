"""What runs between the grader and bubblewrap: the last step of building the wall, run as its
own short process (``python -I -S prelude.py SPEC``) that ends by becoming ``bwrap``.

Grader-side code: it never runs with student code, and imports nothing but the standard
library (it starts without ``site``). In order, it

1. moves itself into the sandbox's cgroups, while it still has the grader's rights;
2. makes a private mount namespace (and, when the grader is not root, a user namespace of its
   own, in which the grader's uid is root) so nothing it mounts is seen outside;
3. mounts a small tmpfs on the grader's private *reach* folder and binds into it, by path,
   every folder and file the sandbox mounts from the instructor's side (the Python
   installation, the package copy, the font cache): bubblewrap then reads them through a path
   an unprivileged uid can walk, even when the real one is under ``/root``;
4. when the grader is root, makes the sandbox's ``/dev/null``, ``zero``, ``random`` and
   ``urandom`` afresh in a tmpfs of this run (the same devices, new nodes: nothing one
   sandbox does to them is seen by the next);
5. mounts the sandbox's writable tmpfs with a size cap **and an inode cap** (``nr_inodes``:
   tmpfs keeps every file, directory and extended attribute in kernel memory that ``size``
   does not count, about 1 KiB each);
6. when the grader is root, drops every group and becomes the unprivileged ``drop`` uid, so
   the sandbox's user maps to that uid outside, never to root: it owns nothing on the machine;
7. becomes ``argv`` (bubblewrap).

When step 2 is refused (a kernel or AppArmor policy that lets only ``bwrap`` make user
namespaces), it becomes ``fallback`` instead: bubblewrap with its own tmpfs (size cap, no inode
cap) and, for root, the same drop of uid. With ``announce`` it first says which on stderr.
"""

import ctypes
import json
import os
import stat
import sys

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
DEVICES = {"null": (1, 3), "zero": (1, 5), "random": (1, 8), "urandom": (1, 9)}
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _mount(libc, source, target, fstype, flags, data=None) -> None:
    enc = [None if x is None else os.fsencode(x) for x in (source, target, fstype, data)]
    if libc.mount(enc[0], enc[1], enc[2], flags, enc[3]) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _private_namespace(libc, spec) -> None:
    """A mount namespace of its own (with a user namespace of its own when not root)."""
    if spec["userns"]:
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "unshare")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    elif libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)


def _build(libc, spec) -> None:
    reach = spec["reach"]
    _mount(libc, "tmpfs", reach, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=256")
    for src, name in spec["binds"]:
        target = os.path.join(reach, name)
        if os.path.isdir(src):
            os.mkdir(target, 0o755)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        _mount(libc, src, target, None, MS_BIND | MS_REC)
    if spec.get("devices"):  # root: device nodes of its own, fresh for every run
        devices = os.path.join(reach, "dev")
        os.mkdir(devices, 0o755)
        _mount(libc, "tmpfs", devices, "tmpfs", MS_NOSUID, "mode=0755,size=16k,nr_inodes=16")
        for name, (major, minor) in DEVICES.items():
            path = os.path.join(devices, name)
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
            os.chmod(path, 0o666)  # past the umask
    t = spec["tmpfs"]
    target = os.path.join(reach, "sandbox")
    os.mkdir(target, 0o755)
    options = f"mode=0755,size={t['size']},nr_inodes={t['inodes']},uid={t['uid']},gid={t['gid']}"
    _mount(libc, "tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, options)


def _drop(spec) -> None:
    if spec.get("drop"):
        uid, gid = spec["drop"]
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise SystemExit(126)


def _exec_dropped(spec, argv) -> None:
    """Drop the uid (for root) and become ``argv``. The program is opened first, so a
    bubblewrap the dropped uid could not reach by its path (one under ``/root``) still runs:
    by its descriptor, which is closed on exec (left open only for a script, which needs it)."""
    fd = None
    if spec.get("drop"):
        fd = os.open(argv[0], os.O_RDONLY | os.O_CLOEXEC)
        if os.pread(fd, 2, 0) == b"#!":
            os.set_inheritable(fd, True)
    _drop(spec)
    try:
        os.execv(argv[0], argv)
    except PermissionError:
        if fd is None:
            raise
        os.execve(fd, argv, dict(os.environ))


def main() -> None:
    spec = json.loads(sys.argv[1])
    try:
        for procs in spec.get("procs", []):
            _write(procs, str(os.getpid()))
    except OSError:
        os._exit(125)  # the grader reads 125 with no output as "could not enter the cgroup"
    libc = _libc()
    argv, mode = spec["argv"], "private"
    try:
        _private_namespace(libc, spec)
        _build(libc, spec)
    except OSError as exc:
        argv, mode = spec["fallback"], f"fallback ({exc.strerror or exc})"
    if spec.get("announce"):
        os.write(2, f"mha-prelude: {mode}\n".encode())
    try:
        _exec_dropped(spec, argv)
    except OSError as exc:
        os.write(2, f"could not start {argv[0]}: {exc.strerror or exc}\n".encode())
        os._exit(127)


if __name__ == "__main__":
    main()
