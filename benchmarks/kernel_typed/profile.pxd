# C types for profile.py when it is compiled into the kernel (batfeed/kernel.py, docs/kernel.md);
# the .py stays the reference and runs without Cython.  Every value keeps its Python type.
import cython


cdef class Profile:
    cdef public object ends_in_steps
    cdef public list _keys, _rets, _ids, _sums, _maxes
    cdef public dict jobs
    cdef public object total, _seq, version
    cdef public list times, deltas, windows
    cdef public object unavailable

    @cython.locals(keys=list, b=Py_ssize_t, i=Py_ssize_t, h=Py_ssize_t, blk=list)
    cpdef add(self, jid, end, ivs, ret)

    @cython.locals(b=Py_ssize_t)
    cpdef tuple _locate(self, jid)

    @cython.locals(b=Py_ssize_t, i=Py_ssize_t)
    cpdef remove(self, jid)

    @cython.locals(b=Py_ssize_t, i=Py_ssize_t)
    cpdef set_ret(self, jid, ret)

    @cython.locals(b=Py_ssize_t, i=Py_ssize_t, inner=list, cum=list)
    cpdef tuple crossing(self, need)

    @cython.locals(times=list, deltas=list, i=Py_ssize_t)
    cpdef _step(self, t, delta)
