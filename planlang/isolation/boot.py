"""The fork server's first lines, run as a script before any of planlang is imported.

``python -I -S boot.py CONFIG``: where RLIMIT_STACK is below what the host asks for
(``config["stack"]``, the deepest stack a plan may need) and may be raised, it is raised and the
interpreter starts again, once, for the kernel leaves room below the main thread's stack only
for the limit it had when the program started. So a plan runs on its process's main thread,
however deep its step limit lets it nest, and no plan process starts a thread for it. Then the
server proper (``planlang.isolation.zygote.serve``) runs.

Without ``site`` (``-S``): its ``.pth`` files import modules no plan process uses (some 30
here: certifi's, tempfile, zipfile, shutil), each a part of the memory every fork copies the
page tables of and every plan process unmaps at its exit. The host's ``sys.path`` comes in
``config["path"]``, after the folder this planlang was imported from (an editable install's
finder, itself a ``.pth``'s, is not there to find it).
"""

from __future__ import annotations

import json
import os
import resource
import sys

# The folder that holds this planlang (and runtime beside it)
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _raised(config: dict[str, object]) -> bool:
    """True if the stack limit was raised and this process must start again to have it."""
    want = int(str(config.get("stack") or 0))
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    infinity = resource.RLIM_INFINITY
    if config.get("again") or not want or soft == infinity or soft >= want:
        return False
    if hard != infinity and hard < want:
        return False
    try:
        resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
    except (OSError, ValueError):
        return False
    return True


def main() -> None:
    config = json.loads(sys.argv[1])
    if _raised(config):
        again = json.dumps({**config, "again": True})
        started = {"-I": sys.flags.isolated, "-s": sys.flags.no_user_site,
                   "-P": sys.flags.safe_path, "-S": sys.flags.no_site}  # fmt: skip
        flags = [flag for flag, on in started.items() if on]  # as it was started
        os.execv(sys.executable, [sys.executable, *flags, __file__, again])  # noqa: S606
    sys.path[:0] = [_ROOT, *config["path"]]
    from planlang.isolation.zygote import serve

    serve(config)


if __name__ == "__main__":
    main()
