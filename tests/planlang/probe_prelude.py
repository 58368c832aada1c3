"""Raw Python a red-team test runs in a plan's process (planlang.isolation.testing.run_probe):
the audit hook switched off (as if it had failed), and libc's syscall for calls Python does not
wrap (``call`` raises OSError on a refusal; ``tried`` names the attempts that were not refused).
"""

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
