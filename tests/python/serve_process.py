"""`myriad serve` (or any long-lived myriad command) as a test's child that dies with the test.

The child gets its own process group, is killed with it on failure, in teardown, at interpreter
exit, and by the kernel when the test process itself dies (PR_SET_PDEATHSIG), so no server
outlives a test run. Readiness waits are sized for a loaded 2-core machine: each /health poll
may take 10 s and the server has 300 s to load.
"""

import atexit
import ctypes
import os
import signal
import subprocess
import time

import requests

HEALTH_POLL_S = 10
START_DEADLINE_S = 300
_PR_SET_PDEATHSIG = 1
_children = set()


def _dying_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(args, **kw):
    """subprocess.Popen(args, **kw) in its own process group, killed when this process dies.
    A process group, not a new session: with setsid test_serve's 64-stream load test saw
    connection resets (not yet understood)."""
    proc = subprocess.Popen(args, process_group=0, preexec_fn=_dying_with_parent, **kw)
    _children.add(proc)
    return proc


def kill(proc):
    """Kills the process group of `proc` (if still there) and reaps it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    _children.discard(proc)


def stop(proc, grace_s=60):
    """SIGTERM (the server drains), then the group's SIGKILL if it has not exited in grace_s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
    kill(proc)


def wait_healthy(proc, url, output=lambda: ""):
    """Polls url/health until 200; on exit or deadline kills the group and raises with the
    server's output."""
    deadline = time.time() + START_DEADLINE_S
    while time.time() < deadline:
        if proc.poll() is not None:
            kill(proc)
            raise AssertionError(f"myriad serve exited with {proc.returncode}:\n{output()}")
        try:
            if requests.get(url + "/health", timeout=HEALTH_POLL_S).status_code == 200:
                return
        except (requests.ConnectionError, requests.Timeout):
            pass
        time.sleep(0.2)
    kill(proc)
    raise AssertionError(f"myriad serve was not healthy after {START_DEADLINE_S} s:\n{output()}")


@atexit.register
def _kill_all():
    for proc in list(_children):
        kill(proc)
