# Sent on the main shell before a run on a kernel with subshells (engine/subshell.go), so
# that it is in place before any read beside the run. ipykernel's set_parent, called for
# every request, also sets kernel-wide fallbacks: the parent header of sys.stdout,
# sys.stderr, the display hook and publisher, and the kernel's shell context. Threads
# that never set their own parent (the run's threads, and ipykernel's watcher that
# carries subprocess, os.system and C-library output) use those, and input() in such a
# thread sends its request with them. A read on a subshell would make them the read's,
# and the run's output from there would go to the read. On a subshell's thread this
# sets only the parts of the calling thread; elsewhere set_parent works as before.
# It also counts the kernel's input() and getpass() calls that have returned
# (_km_inputs_done): a read sent after an answer waits in the kernel until the code has
# taken it (py/subshell_guard.py), or it could find the question's name not yet set.
# It runs in a dict of its own.
import sys
import threading

_k = get_ipython().kernel
if not getattr(_k.set_parent, "_km_guard", False) and hasattr(_k, "_shell_parent_ident") and hasattr(_k, "_shell_parent"):
    _set_parent = _k.set_parent

    def _guarded(ident, parent, channel="shell", _k=_k, _set_parent=_set_parent):
        if channel != "shell" or not threading.current_thread().name.startswith("subshell-"):
            return _set_parent(ident, parent, channel)
        _k._shell_parent_ident.set(ident)
        _k._shell_parent.set(parent)
        shell = _k.shell
        for o in (sys.stdout, sys.stderr, getattr(shell, "displayhook", None), getattr(shell, "display_pub", None)):
            f = getattr(o, "set_thread_parent", None)
            if f is not None:
                f(parent)
        return None

    _guarded._km_guard = True
    _k.set_parent = _guarded

if hasattr(_k, "_input_request") and not getattr(_k._input_request, "_km_count", False):
    _input_request = _k._input_request
    _k._km_inputs_done = getattr(_k, "_km_inputs_done", 0)

    def _counted(*args, _k=_k, _input_request=_input_request, **kwargs):
        try:
            return _input_request(*args, **kwargs)
        finally:
            _k._km_inputs_done += 1

    _counted._km_count = True
    _k._input_request = _counted
