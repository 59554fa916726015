# C types for jobqueue.py when it is compiled into the kernel (batfeed/kernel.py, docs/kernel.md);
# the .py stays the reference and runs without Cython.  Every value keeps its Python type.
import cython


cdef class ScanState:
    cdef public object free, horizon, extra


cdef class QueueIndex:
    cdef public list keys, ents, qs, ps, maxes, tq, tp
    cdef public object n, examined, size

    @cython.locals(nb=Py_ssize_t, size=Py_ssize_t, i=Py_ssize_t, tq=list, tp=list)
    cpdef _build_tree(self)

    @cython.locals(tq=list, tp=list, i=Py_ssize_t)
    cpdef _lower(self, Py_ssize_t b, q, p)

    @cython.locals(tq=list, tp=list, i=Py_ssize_t)
    cpdef _fix(self, Py_ssize_t b)

    @cython.locals(b=Py_ssize_t, i=Py_ssize_t, h=Py_ssize_t, keys=list, blk=list)
    cpdef add(self, key, e)

    @cython.locals(b=Py_ssize_t, i=Py_ssize_t, c=Py_ssize_t, lo=Py_ssize_t, hi=Py_ssize_t, leaf=Py_ssize_t,
                   keys=list)
    cpdef remove(self, key)


cdef class WaitQueue:
    cdef public object P, B, theta, seq, dynamic, n
    cdef public QueueIndex main, starved
    cdef public object main_b
    cdef public list _arrivals, new

    cpdef push(self, job, now, walltime=*)
    cpdef remove(self, e)
    @cython.locals(arr=list)
    cpdef refresh(self, now)
    cpdef head(self)
