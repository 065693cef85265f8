# The code of every read on a subshell beside a run (engine/subshell.go); the read itself
# follows as a user_expression. IPython runs its pre_execute and post_execute hooks
# around every cell, empty and silent ones too, and matplotlib's inline backend hooks
# post_execute to show and close the figures drawn since the last cell: from a read
# beside a run, that would take the run's figures from it and drive matplotlib from a
# second thread. This marks the reading thread and makes IPython skip those two hooks
# on threads so marked, this cell's post_execute included. Other threads, the main
# shell's among them, run their hooks as before. It runs in a dict of its own.
import threading

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
