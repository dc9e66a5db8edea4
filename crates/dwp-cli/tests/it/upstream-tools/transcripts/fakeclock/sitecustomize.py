# Freezes the wall clock of a Python process (the upstream helpers) at DWP_FAKE_EPOCH:
# time.time() and time.gmtime()/localtime() without an argument. Monotonic time stays real.
import os, time
_epoch = os.environ.get('DWP_FAKE_EPOCH')
if _epoch:
    _now = float(_epoch)
    _gmtime, _localtime = time.gmtime, time.localtime
    time.time = lambda: _now
    time.gmtime = lambda secs=None: _gmtime(_now if secs is None else secs)
    time.localtime = lambda secs=None: _localtime(_now if secs is None else secs)
