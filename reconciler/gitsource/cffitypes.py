"""pygit2's C types, realized once in one thread before the git cache's pool shares them.

pygit2 calls libgit2 through cffi, which builds ("realizes") each C type the first time it
is used and stores it in a table the whole process shares. cffi 2.0 asserts, on builds of
Python with a GIL too, that no other thread stored the same entry while it was building
one; but building may run Python code (a collection, a finalizer) and so let another thread
in. When two of the cache's threads first use one type at once, the process aborts:
``realize_c_type.c: realize_c_type_or_func_lock_held: Assertion ... failed`` (seen in
``bench/throughput.py``, whose seed polls twenty repositories at once; whether builds with a
GIL are meant to be safe here is asked upstream in python-cffi/cffi#271). Realizing every
type first, in one thread, leaves nothing for two threads to build: each function of the
library (its signature's types), each named type, and each struct's fields. It takes about
a millisecond.
"""

from __future__ import annotations

import contextlib
import threading

from pygit2.ffi import C, ffi

_done = False
_lock = threading.Lock()


def realized() -> bool:
    return _done


def realize() -> None:
    """Build every C type pygit2 declares (once a process; later calls return at once)."""
    global _done
    with _lock:
        if _done:
            return
        for name in dir(C):
            with contextlib.suppress(AttributeError):  # (a name the library lacks)
                getattr(C, name)
        typedefs, structs, unions = ffi.list_types()
        named = [*typedefs, *(f"struct {s}" for s in structs), *(f"union {u}" for u in unions)]
        for each in named:
            with contextlib.suppress(ffi.error, TypeError, ValueError):  # (opaque, a function)
                ffi.sizeof(ffi.typeof(each))
        _done = True
