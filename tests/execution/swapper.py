"""Swap two names over and over with renameat2(RENAME_EXCHANGE), as a hostile model's
background process would: ``python swapper.py A B SECONDS REPORT``.

It exchanges A and B (a folder and a symlink to somewhere outside) as fast as it can for
SECONDS, then writes how many swaps it made to REPORT. Run by the race tests, sandboxed or
not, from a shell call of the session under attack.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

AT_FDCWD = -100
RENAME_EXCHANGE = 2


def main() -> None:
    first, second, seconds, report = sys.argv[1:5]
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = libc.renameat2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    a, b = os.fsencode(first), os.fsencode(second)
    swaps = 0
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:
        if renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
            raise OSError(ctypes.get_errno(), "renameat2 failed")
        swaps += 1
    if swaps % 2:  # leave the folder where it was, for the test's own checks
        renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    with open(report + ".part", "w") as handle:  # renamed whole: the test polls for it
        handle.write(str(swaps))
    os.replace(report + ".part", report)


if __name__ == "__main__":
    main()
