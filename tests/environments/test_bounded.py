"""A command's output is bounded as it streams: a flood of hundreds of megabytes keeps its
head and tail and says how much was cut, in a process whose memory stays small; the
timeout still kills everything (in a container too: tests/environments/test_docker.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from fencecall.environments._bounded import run_bounded

_FLOOD = 400 * 2**20


def test_a_flood_keeps_its_head_and_tail_and_counts_the_cut_in_little_memory() -> None:
    script = textwrap.dedent(f"""
        import re
        from fencecall.environments._bounded import run_bounded
        done = run_bounded(["sh", "-c", "echo first; head -c {_FLOOD} /dev/zero | tr '\\\\0' x;"
                            " echo; echo last; echo err >&2"], 120, limit=1000)
        print(done.returncode, len(done.stdout), repr(done.stdout[:6]),
              repr(done.stdout[-5:]), repr(done.stderr),
              done.stdout.split("[... ")[1].split()[0],
              re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())[1])
    """)
    # the peak of this interpreter's own memory: not ru_maxrss, which keeps across exec the
    # resident size of the process it was forked from (a long test session's, hundreds of MB)
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, check=True)
    code, size, head, tail, err, cut, peak_kb = ran.stdout.split()
    assert (code, head, tail, err) == ("0", "'first\\n'", "'last\\n'", "'err\\n'")
    assert int(size) < 1100 and int(cut) == _FLOOD + len("first\n\nlast\n") - 1000
    assert int(peak_kb) < 100 * 1024, f"{peak_kb} kB: the flood was held"


def test_the_timeout_kills_the_group_and_keeps_what_came() -> None:
    clock = time.monotonic()
    stopped: list[bool] = []
    done = run_bounded(["sh", "-c", "echo before; sleep 30 & sleep 30; echo after"], 1,
                       on_timeout=lambda: stopped.append(True))
    assert done.returncode is None and done.stdout == "before\n" and stopped
    assert time.monotonic() - clock < 10  # the orphan's pipe did not hold it


def test_a_small_output_is_whole() -> None:
    done = run_bounded(["sh", "-c", "printf 'a\\nb'; exit 3"], 10, limit=4)
    assert (done.returncode, done.stdout, done.stderr) == (3, "a\nb", "")
