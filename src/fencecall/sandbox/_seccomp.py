"""A seccomp filter for runs nobody confirmed, for what mounts and rlimits cannot stop.

A read-only mount does not stop ``connect()`` to a Unix socket on it (a daemon's socket under
the home, say), and ``RLIMIT_FSIZE`` does not stop ``fallocate`` from reserving disk blocks
without growing a file (on the inherited output files, gigabytes in a millisecond, before
any watch can look). So an unconfirmed run gets a classic BPF filter, loaded by bwrap
(``--seccomp FD``), that refuses:

- ``socket(AF_UNIX, ...)`` (EACCES): name lookups fall back to the files, as they do
  without nscd; ``socketpair`` stays, it reaches nothing;
- ``fallocate`` (EPERM), and ``io_uring_setup`` (ENOSYS), through which a file could be
  allocated without the ``fallocate`` call;
- every call of another ABI (i386 on x86-64, x32), whose numbers the filter does not check.

Built for x86-64 and arm64; elsewhere there is no filter (the mounts and limits still hold).
"""

from __future__ import annotations

import os
import struct

_LOAD = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_EPERM, _EACCES, _ENOSYS = 1, 13, 38
_AF_UNIX = 1
_X32_BIT = 0x40000000

_ARCHES = {
    # machine: (AUDIT_ARCH, socket, fallocate, io_uring_setup, has x32)
    "x86_64": (0xC000003E, 41, 285, 425, True),
    "aarch64": (0xC00000B7, 198, 47, 425, False),
}


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def unconfirmed_filter(machine: str | None = None) -> bytes | None:
    """The filter's program for ``machine`` (default: this one), or None where it has
    none."""
    found = _ARCHES.get(machine or os.uname().machine)  # platform.machine(), without its import
    if found is None:
        return None
    arch, socket, fallocate, io_uring_setup, x32 = found
    program = [_op(_LOAD, 4), _op(_JEQ, arch, 1, 0), _op(_RET, _ERRNO | _EPERM),
               _op(_LOAD, 0)]
    if x32:
        program += [_op(_JGE, _X32_BIT, 0, 1), _op(_RET, _ERRNO | _ENOSYS)]
    program += [_op(_JEQ, fallocate, 0, 1), _op(_RET, _ERRNO | _EPERM),
                _op(_JEQ, io_uring_setup, 0, 1), _op(_RET, _ERRNO | _ENOSYS),
                _op(_JEQ, socket, 0, 3), _op(_LOAD, 16),  # the low half of the first argument
                _op(_JEQ, _AF_UNIX, 0, 1), _op(_RET, _ERRNO | _EACCES),
                _op(_RET, _ALLOW)]
    return b"".join(program)
