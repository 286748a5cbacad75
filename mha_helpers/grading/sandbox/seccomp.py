"""The sandbox's system-call filter: a default-deny allowlist, as a classic-BPF seccomp program.

The allowlist is the set of calls moby (Docker's engine) allows every container by default,
minus everything a grading run never needs and that has been, or could be, a side door
(:data:`DENIED_ON_PURPOSE`): new processes and threads, the kernel keyrings, ``ptrace`` and
``process_vm_*``, ``memfd_create`` and the System V / POSIX shared memory and message queues
(memory that an address-space limit does not count), namespaces and mounts, ``io_uring``,
asynchronous I/O, ``bpf``, ``perf_event_open``, ``userfaultfd`` and sockets (the sandbox has no
network), and since round three machine-wide writeback and cache eviction (``sync``, ``syncfs``,
``fadvise64``), inotify (charged to the uid outside), setting extended attributes (tmpfs keeps
them in kernel memory its size cap does not count) and setting file times (the only mark a
sandbox could leave on a device node it shares with the next one). Any other call fails with ``EPERM`` (``clone3`` with ``ENOSYS``, so a C library falls
back to ``clone``, which is refused too); a call from another ABI (32-bit ``int 0x80`` on x86_64,
x32) kills the process.
"""

from __future__ import annotations

import platform
import struct

__all__ = [
    "seccomp_program",
    "ALLOWED",
    "DENIED_ON_PURPOSE",
    "DENIED_NUMBERS",
    "AUDIT_ARCH",
    "SIGNAL_ARG",
]

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

DENIED_ON_PURPOSE = {
    "new processes and threads": "fork vfork clone clone3",
    "kernel keyrings": "add_key request_key keyctl",
    "other processes' memory": "ptrace process_vm_readv process_vm_writev kcmp pidfd_getfd "
    "process_madvise",
    "memory an address-space limit does not count": "memfd_create memfd_secret shmget shmat "
    "shmdt shmctl msgget msgsnd msgrcv msgctl semget semop semtimedop semctl mq_open mq_unlink "
    "mq_timedsend mq_timedreceive mq_notify mq_getsetattr mlock mlock2 mlockall io_setup "
    "io_submit io_getevents io_pgetevents io_cancel io_destroy remap_file_pages",
    "namespaces and mounts": "unshare setns mount umount2 fsopen fsmount fsconfig fspick "
    "move_mount open_tree mount_setattr listmount statmount",
    "kernel attack surface": "io_uring_setup io_uring_enter io_uring_register bpf "
    "perf_event_open userfaultfd modify_ldt personality name_to_handle_at fanotify_mark",
    "machine-wide writeback and cache eviction": "sync syncfs fadvise64",
    "file-change watches (charged to the uid outside)": "inotify_init inotify_init1 "
    "inotify_add_watch inotify_rm_watch",
    "extended attributes (kernel memory a tmpfs size cap does not count)": "setxattr lsetxattr "
    "fsetxattr removexattr lremovexattr fremovexattr",
    "file times (a mark a later sandbox could read on a shared device node)": "utime utimes "
    "futimesat utimensat utimensat_time64",
    "network": "socket socketpair accept accept4 bind connect listen getpeername getsockname "
    "getsockopt setsockopt recvfrom recvmsg recvmmsg sendto sendmsg sendmmsg shutdown",
}

# fmt: off
# Generated from moby's default seccomp profile (profiles/seccomp/default.json, the names it
# allows unconditionally) minus the calls listed in DENIED_ON_PURPOSE, numbered from the kernel's
# uapi headers (asm/unistd_64.h for x86_64, asm-generic/unistd.h for aarch64).
ALLOWED = {
    "x86_64": {
    "read": 0, "write": 1, "open": 2, "close": 3, "stat": 4, "fstat": 5, "lstat": 6, "poll": 7,
    "lseek": 8, "mmap": 9, "mprotect": 10, "munmap": 11, "brk": 12, "rt_sigaction": 13,
    "rt_sigprocmask": 14, "rt_sigreturn": 15, "ioctl": 16, "pread64": 17, "pwrite64": 18,
    "readv": 19, "writev": 20, "access": 21, "pipe": 22, "select": 23, "sched_yield": 24,
    "mremap": 25, "msync": 26, "mincore": 27, "madvise": 28, "dup": 32, "dup2": 33, "pause":
    34, "nanosleep": 35, "getitimer": 36, "alarm": 37, "setitimer": 38, "getpid": 39,
    "sendfile": 40, "execve": 59, "exit": 60, "wait4": 61, "kill": 62, "uname": 63, "fcntl":
    72, "flock": 73, "fsync": 74, "fdatasync": 75, "truncate": 76, "ftruncate": 77, "getdents":
    78, "getcwd": 79, "chdir": 80, "fchdir": 81, "rename": 82, "mkdir": 83, "rmdir": 84,
    "creat": 85, "link": 86, "unlink": 87, "symlink": 88, "readlink": 89, "chmod": 90,
    "fchmod": 91, "chown": 92, "fchown": 93, "lchown": 94, "umask": 95, "gettimeofday": 96,
    "getrlimit": 97, "getrusage": 98, "sysinfo": 99, "times": 100, "getuid": 102, "getgid":
    104, "setuid": 105, "setgid": 106, "geteuid": 107, "getegid": 108, "setpgid": 109,
    "getppid": 110, "getpgrp": 111, "setsid": 112, "setreuid": 113, "setregid": 114,
    "getgroups": 115, "setgroups": 116, "setresuid": 117, "getresuid": 118, "setresgid": 119,
    "getresgid": 120, "getpgid": 121, "setfsuid": 122, "setfsgid": 123, "getsid": 124,
    "capget": 125, "capset": 126, "rt_sigpending": 127, "rt_sigtimedwait": 128,
    "rt_sigqueueinfo": 129, "rt_sigsuspend": 130, "sigaltstack": 131, "mknod":
    133, "statfs": 137, "fstatfs": 138, "getpriority": 140, "setpriority": 141,
    "sched_setparam": 142, "sched_getparam": 143, "sched_setscheduler": 144,
    "sched_getscheduler": 145, "sched_get_priority_max": 146, "sched_get_priority_min": 147,
    "sched_rr_get_interval": 148, "munlock": 150, "munlockall": 152, "prctl": 157,
    "arch_prctl": 158, "adjtimex": 159, "setrlimit": 160, "gettid": 186,
    "readahead": 187, "getxattr": 191,
    "lgetxattr": 192, "fgetxattr": 193, "listxattr": 194, "llistxattr": 195, "flistxattr": 196,
    "tkill": 200, "time": 201,
    "futex": 202, "sched_setaffinity": 203, "sched_getaffinity": 204, "epoll_create": 213,
    "epoll_ctl_old": 214, "epoll_wait_old": 215, "getdents64": 217, "set_tid_address": 218,
    "restart_syscall": 219, "timer_create": 222, "timer_settime": 223,
    "timer_gettime": 224, "timer_getoverrun": 225, "timer_delete": 226, "clock_gettime": 228,
    "clock_getres": 229, "clock_nanosleep": 230, "exit_group": 231, "epoll_wait": 232,
    "epoll_ctl": 233, "tgkill": 234, "waitid": 247, "ioprio_set": 251,
    "ioprio_get": 252, 
    "openat": 257, "mkdirat": 258, "mknodat": 259, "fchownat": 260, 
    "newfstatat": 262, "unlinkat": 263, "renameat": 264, "linkat": 265, "symlinkat": 266,
    "readlinkat": 267, "fchmodat": 268, "faccessat": 269, "pselect6": 270, "ppoll": 271,
    "set_robust_list": 273, "get_robust_list": 274, "splice": 275, "tee": 276,
    "sync_file_range": 277, "vmsplice": 278, "epoll_pwait": 281, "signalfd":
    282, "timerfd_create": 283, "eventfd": 284, "fallocate": 285, "timerfd_settime": 286,
    "timerfd_gettime": 287, "signalfd4": 289, "eventfd2": 290, "epoll_create1": 291, "dup3":
    292, "pipe2": 293, "preadv": 295, "pwritev": 296,
    "rt_tgsigqueueinfo": 297, "prlimit64": 302, "clock_adjtime": 305, "getcpu":
    309, "sched_setattr": 314, "sched_getattr": 315, "renameat2": 316, "seccomp": 317,
    "getrandom": 318, "execveat": 322, "membarrier": 324, "copy_file_range": 326, "preadv2":
    327, "pwritev2": 328, "pkey_mprotect": 329, "pkey_alloc": 330, "pkey_free": 331, "statx":
    332, "rseq": 334, "pidfd_send_signal": 424, "pidfd_open": 434, "close_range": 436,
    "openat2": 437, "faccessat2": 439, "epoll_pwait2": 441, "landlock_create_ruleset": 444,
    "landlock_add_rule": 445, "landlock_restrict_self": 446, "process_mrelease": 448,
    "futex_waitv": 449
    },
    "aarch64": {
    "getxattr": 8, "lgetxattr": 9, "fgetxattr":
    10, "listxattr": 11, "llistxattr": 12, "flistxattr": 13, "getcwd": 17, "eventfd2": 19, "epoll_create1": 20, "epoll_ctl": 21,
    "epoll_pwait": 22, "dup": 23, "dup3": 24, "fcntl": 25, 
    "ioctl": 29, "ioprio_set": 30,
    "ioprio_get": 31, "flock": 32, "mknodat": 33, "mkdirat": 34, "unlinkat": 35, "symlinkat":
    36, "linkat": 37, "renameat": 38, "statfs": 43, "fstatfs": 44, "truncate": 45, "ftruncate":
    46, "fallocate": 47, "faccessat": 48, "chdir": 49, "fchdir": 50, "fchmod": 52, "fchmodat":
    53, "fchownat": 54, "fchown": 55, "openat": 56, "close": 57, "pipe2": 59, "getdents64": 61,
    "lseek": 62, "read": 63, "write": 64, "readv": 65, "writev": 66, "pread64": 67, "pwrite64":
    68, "preadv": 69, "pwritev": 70, "sendfile": 71, "pselect6": 72, "ppoll": 73, "signalfd4":
    74, "vmsplice": 75, "splice": 76, "tee": 77, "readlinkat": 78, "fstat": 80, 
    "fsync": 82, "fdatasync": 83, "sync_file_range": 84, "timerfd_create": 85,
    "timerfd_settime": 86, "timerfd_gettime": 87, "capget": 90, "capset": 91,
    "exit": 93, "exit_group": 94, "waitid": 95, "set_tid_address": 96, "futex": 98,
    "set_robust_list": 99, "get_robust_list": 100, "nanosleep": 101, "getitimer": 102,
    "setitimer": 103, "timer_create": 107, "timer_gettime": 108, "timer_getoverrun": 109,
    "timer_settime": 110, "timer_delete": 111, "clock_gettime": 113, "clock_getres": 114,
    "clock_nanosleep": 115, "sched_setparam": 118, "sched_setscheduler": 119,
    "sched_getscheduler": 120, "sched_getparam": 121, "sched_setaffinity": 122,
    "sched_getaffinity": 123, "sched_yield": 124, "sched_get_priority_max": 125,
    "sched_get_priority_min": 126, "sched_rr_get_interval": 127, "restart_syscall": 128,
    "kill": 129, "tkill": 130, "tgkill": 131, "sigaltstack": 132, "rt_sigsuspend": 133,
    "rt_sigaction": 134, "rt_sigprocmask": 135, "rt_sigpending": 136, "rt_sigtimedwait": 137,
    "rt_sigqueueinfo": 138, "rt_sigreturn": 139, "setpriority": 140, "getpriority": 141,
    "setregid": 143, "setgid": 144, "setreuid": 145, "setuid": 146, "setresuid": 147,
    "getresuid": 148, "setresgid": 149, "getresgid": 150, "setfsuid": 151, "setfsgid": 152,
    "times": 153, "setpgid": 154, "getpgid": 155, "getsid": 156, "setsid": 157, "getgroups":
    158, "setgroups": 159, "uname": 160, "getrlimit": 163, "setrlimit": 164, "getrusage": 165,
    "umask": 166, "prctl": 167, "getcpu": 168, "gettimeofday": 169, "adjtimex": 171, "getpid":
    172, "getppid": 173, "getuid": 174, "geteuid": 175, "getgid": 176, "getegid": 177,
    "gettid": 178, "sysinfo": 179, "readahead": 213, "brk": 214, "munmap": 215, "mremap": 216,
    "execve": 221, "mmap": 222, "mprotect": 226, "msync": 227, "munlock":
    229, "munlockall": 231, "mincore": 232, "madvise": 233, "rt_tgsigqueueinfo": 240, "wait4":
    260, "prlimit64": 261, "clock_adjtime": 266, "sched_setattr": 274,
    "sched_getattr": 275, "renameat2": 276, "seccomp": 277, "getrandom": 278, "execveat": 281,
    "membarrier": 283, "copy_file_range": 285, "preadv2": 286, "pwritev2": 287,
    "pkey_mprotect": 288, "pkey_alloc": 289, "pkey_free": 290, "statx": 291, "rseq": 293,
    "clock_gettime64": 403, "clock_adjtime64": 405, "clock_getres_time64": 406,
    "clock_nanosleep_time64": 407, "timer_gettime64": 408, "timer_settime64": 409,
    "timerfd_gettime64": 410, "timerfd_settime64": 411, 
    "pselect6_time64": 413, "ppoll_time64": 414, "rt_sigtimedwait_time64": 421, "futex_time64":
    422, "sched_rr_get_interval_time64": 423, "pidfd_send_signal": 424, "pidfd_open": 434,
    "close_range": 436, "openat2": 437, "faccessat2": 439, "epoll_pwait2": 441,
    "landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446,
    "process_mrelease": 448, "futex_waitv": 449
    },
}
# fmt: on

# The calls of DENIED_ON_PURPOSE by number (the tests make each one from inside the sandbox).
# fmt: off
DENIED_NUMBERS = {
    "x86_64": {
        "utime": 132, "sync": 162, "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199, "fadvise64": 221, "utimes": 235, "inotify_init": 253, "inotify_add_watch": 254, "inotify_rm_watch": 255, "futimesat": 261, "utimensat": 280, "inotify_init1": 294, "syncfs": 306,
        "shmget": 29, "shmat": 30, "shmctl": 31, "socket": 41, "connect": 42, "accept": 43,
        "sendto": 44, "recvfrom": 45, "sendmsg": 46, "recvmsg": 47, "shutdown": 48, "bind":
        49, "listen": 50, "getsockname": 51, "getpeername": 52, "socketpair": 53,
        "setsockopt": 54, "getsockopt": 55, "clone": 56, "fork": 57, "vfork": 58, "semget":
        64, "semop": 65, "semctl": 66, "shmdt": 67, "msgget": 68, "msgsnd": 69, "msgrcv":
        70, "msgctl": 71, "ptrace": 101, "personality": 135, "mlock": 149, "mlockall": 151,
        "modify_ldt": 154, "mount": 165, "umount2": 166, "io_setup": 206, "io_destroy":
        207, "io_getevents": 208, "io_submit": 209, "io_cancel": 210, "remap_file_pages":
        216, "semtimedop": 220, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242,
        "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245, "add_key": 248,
        "request_key": 249, "keyctl": 250, "unshare": 272, "accept4": 288,
        "perf_event_open": 298, "recvmmsg": 299, "fanotify_mark": 301, "name_to_handle_at":
        303, "sendmmsg": 307, "setns": 308, "process_vm_readv": 310, "process_vm_writev":
        311, "kcmp": 312, "memfd_create": 319, "bpf": 321, "userfaultfd": 323, "mlock2":
        325, "io_pgetevents": 333, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "clone3": 435, "pidfd_getfd": 438,
        "process_madvise": 440, "mount_setattr": 442, "memfd_secret": 447, "statmount": 457, "listmount": 458,
    },
    "aarch64": {
        "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16, "inotify_init1": 26, "inotify_add_watch": 27, "inotify_rm_watch": 28, "sync": 81, "utimensat": 88, "fadvise64": 223, "syncfs": 267, "utimensat_time64": 412,
        "io_setup": 0, "io_destroy": 1, "io_submit": 2, "io_cancel": 3, "io_getevents": 4,
        "umount2": 39, "mount": 40, "personality": 92, "unshare": 97, "ptrace": 117,
        "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183,
        "mq_notify": 184, "mq_getsetattr": 185, "msgget": 186, "msgctl": 187, "msgrcv":
        188, "msgsnd": 189, "semget": 190, "semctl": 191, "semtimedop": 192, "semop": 193,
        "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197, "socket": 198,
        "socketpair": 199, "bind": 200, "listen": 201, "accept": 202, "connect": 203,
        "getsockname": 204, "getpeername": 205, "sendto": 206, "recvfrom": 207,
        "setsockopt": 208, "getsockopt": 209, "shutdown": 210, "sendmsg": 211, "recvmsg":
        212, "add_key": 217, "request_key": 218, "keyctl": 219, "clone": 220, "mlock": 228,
        "mlockall": 230, "remap_file_pages": 234, "perf_event_open": 241, "accept4": 242,
        "recvmmsg": 243, "fanotify_mark": 263, "name_to_handle_at": 264, "setns": 268,
        "sendmmsg": 269, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
        "memfd_create": 279, "bpf": 280, "userfaultfd": 282, "mlock2": 284,
        "io_pgetevents": 292, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "clone3": 435, "pidfd_getfd": 438,
        "process_madvise": 440, "mount_setattr": 442, "memfd_secret": 447, "statmount": 457, "listmount": 458,
    },
}
# fmt: on


_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06

# Calls that send a signal, with the index of the signal's argument. A real-time signal (32 and
# up) queues one kernel record per send, and a signal a process sends itself is not counted
# against RLIMIT_SIGPENDING: with no cgroup, nothing would bound that memory. They are refused;
# the classic signals (which do not queue) are allowed.
SIGNAL_ARG = {
    "kill": 1,
    "tkill": 1,
    "tgkill": 2,
    "rt_sigqueueinfo": 1,
    "rt_tgsigqueueinfo": 2,
    "pidfd_send_signal": 1,
}
_ALLOW, _ERRNO, _KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_EPERM, _ENOSYS = 1, 38
_CLONE3 = 435


def _ins(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_program(arch: str | None = None) -> bytes | None:
    """The filter for ``arch`` (default: this machine's), or ``None`` for an architecture this
    module has no table for (the caller then refuses to make a sandbox)."""
    arch = arch or platform.machine()
    if arch not in ALLOWED:
        return None
    prog = [
        _ins(_LD_ABS, 0, 0, 4),  # seccomp_data.arch
        _ins(_JEQ, 1, 0, AUDIT_ARCH[arch]),
        _ins(_RET, 0, 0, _KILL_PROCESS),  # another ABI: refuse outright
        _ins(_LD_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if arch == "x86_64":  # the x32 ABI sets bit 30 of the call number
        prog += [_ins(_JSET, 0, 1, 0x40000000), _ins(_RET, 0, 0, _KILL_PROCESS)]
    prog += [_ins(_JEQ, 0, 1, _CLONE3), _ins(_RET, 0, 0, _ERRNO | _ENOSYS)]
    signalling = {
        ALLOWED[arch][name]: arg for name, arg in SIGNAL_ARG.items() if name in ALLOWED[arch]
    }
    for nr, arg in sorted(signalling.items()):  # a real-time signal queues: refused
        prog += [
            _ins(_JEQ, 0, 4, nr),
            _ins(_LD_ABS, 0, 0, 16 + 8 * arg),  # the low half of the signal's argument
            _ins(_JGE, 0, 1, 32),
            _ins(_RET, 0, 0, _ERRNO | _EPERM),
            _ins(_RET, 0, 0, _ALLOW),
        ]
    for nr in sorted(set(ALLOWED[arch].values()) - set(signalling)):
        prog += [_ins(_JEQ, 0, 1, nr), _ins(_RET, 0, 0, _ALLOW)]
    prog.append(_ins(_RET, 0, 0, _ERRNO | _EPERM))
    return b"".join(prog)
