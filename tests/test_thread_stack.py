"""One lock guards the process-wide ``threading.stack_size``: the runtime's, used by planlang.

Two locks let a run's worker thread and planlang's deep plan thread change the size at once, so
one of them could start at the other's size, or at the 8 MiB default that a deep tuple's hash
crashes (SIGSEGV) instead of the deep stack meant for it.
"""

import threading

from planlang.sandbox import deep_stack
from runtime import stacks


def test_the_deep_plan_thread_waits_for_the_runtimes_stack_lock():
    started = threading.Event()
    finished = threading.Event()

    def start_a_deep_thread() -> None:
        started.set()
        # a size no idle deep thread has yet, so a new thread must be started under the lock
        deep_stack.run_on_deep_stack(lambda: None, 97 * 2**20, lambda: None)
        finished.set()

    with stacks._STACK_LOCK:
        helper = threading.Thread(target=start_a_deep_thread, daemon=True)
        helper.start()
        assert started.wait(30)
        # held by "the runtime": planlang may not change the stack size meanwhile
        assert not finished.wait(0.5)
    assert finished.wait(30)
    helper.join(30)


def test_a_main_thread_whose_stack_fits_runs_the_plan_itself(monkeypatch):
    """A plan's process declares its main thread's stack (main_thread_stack): a plan whose
    stack fits runs right there; one that needs more, or work from another thread, still gets
    a deep thread."""
    monkeypatch.setattr(deep_stack, "_main_stack", [0])
    deep_stack.main_thread_stack(128 * 2**20)
    here = threading.current_thread

    def where() -> threading.Thread:
        return here()

    assert deep_stack.run_on_deep_stack(where, 64 * 2**20, lambda: None) is here()
    assert deep_stack.run_on_deep_stack(where, 256 * 2**20, lambda: None) is not here()
    elsewhere: list[threading.Thread] = []

    def from_a_thread() -> None:
        elsewhere.append(deep_stack.run_on_deep_stack(where, 64 * 2**20, lambda: None))

    helper = threading.Thread(target=from_a_thread)
    helper.start()
    helper.join(30)
    assert elsewhere and elsewhere[0] is not helper
