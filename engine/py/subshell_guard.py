# The code of every read on a subshell beside a run (engine/subshell.go); the read itself
# follows as a user_expression. IPython runs its pre_execute and post_execute hooks
# around every cell, empty and silent ones too, and matplotlib's inline backend hooks
# post_execute to show and close the figures drawn since the last cell: from a read
# beside a run, that would take the run's figures from it and drive matplotlib from a
# second thread. This marks the reading thread and makes IPython skip those two hooks
# on threads so marked, this cell's post_execute included. Other threads, the main
# shell's among them, run their hooks as before.
# _km_answers, set in the dict it runs in, is how many of the kernel's input() and
# getpass() calls the server has answered, counted as py/subshell_parent.py counts the
# ones that returned: the read waits, at most 3 s, until the code has taken every answer
# sent before it, so that a read sent right after send_input sees what the answer set.
import threading
import time

_k = get_ipython().kernel
_end = time.monotonic() + 3
while getattr(_k, "_km_inputs_done", _km_answers) < _km_answers and time.monotonic() < _end:
    time.sleep(0.002)

threading.current_thread()._km_read = True
_events = get_ipython().events
if not getattr(_events.trigger, "_km_guard", False):
    _trigger = _events.trigger

    def _guarded(event, *args, _trigger=_trigger, **kwargs):
        if event in ("pre_execute", "post_execute") and getattr(threading.current_thread(), "_km_read", False):
            return None
        return _trigger(event, *args, **kwargs)

    _guarded._km_guard = True
    _events.trigger = _guarded
