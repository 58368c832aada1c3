"""Raw Python a red-team test runs in a plan's process (planlang.isolation.testing.run_probe,
or ``probed``):
the audit hook switched off (as if it had failed), and libc's syscall for calls Python does not
wrap (``call`` raises OSError on a refusal; ``tried`` names the attempts that were not refused).
"""

from typing import Any

from planlang.isolation.pool import Pool
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

HOOK_OFF = "from planlang.isolation import confine\nconfine._state['strict'] = False\n"
SYSCALL = (
    "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall.restype = ctypes.c_long\n"
    "def call(*args):\n"
    "    n = libc.syscall(*args)\n"
    "    if n < 0:\n"
    "        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))\n"
    "    return n\n"
    "def tried(tries):\n"
    "    done = []\n"
    "    for name, attempt in tries.items():\n"
    "        try:\n            attempt()\n            done.append(name)\n"
    "        except OSError:\n            pass\n"
    "    return done\n"
)
# the child's own Endpoint, its run's context and the handle of the host word ``w``
CHANNEL = """
import gc, time
from planlang.isolation.channel import Endpoint
from planlang.isolation.frames import write_all
from planlang.isolation.child import _ChildSandbox
ep = [o for o in gc.get_objects() if type(o) is Endpoint][0]
R = ep.default_context
box = [o for o in gc.get_objects() if type(o) is _ChildSandbox][0]
wid = box.host['w'].fn.wid
"""


def probed(pool: Pool, probe: str, limits: Limits, **host: Any) -> Sandbox:
    """A sandbox whose run is ``probe`` (raw Python) on ``pool`` (started with probes on)."""
    box = Sandbox(host=dict(host), limits=limits, isolation="process")
    box._pool = pool  # type: ignore[attr-defined]
    box._probe = {"probe": probe}  # type: ignore[attr-defined]
    return box
