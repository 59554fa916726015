"""The iteration order of a C++ ``std::unordered_map<K, V>`` keyed by strings, as libstdc++ (GCC) builds it.

Batsim keeps a workload's jobs in ``std::unordered_map<JobIdentifier, JobPtr, JobIdentifierHasher>``
(``src/jobs.hpp``), whose hasher is ``std::hash<std::string>`` of ``"workload!name"``; where Batsim walks
that map (``batexec_job_launcher_process``) the order decides which of the jobs' actions come first.  It
follows from libstdc++'s ``_Hash_bytes`` (MurmurHash2 64A, seed 0xc70f6907, ``libsupc++/hash_bytes.cc``),
its ``_Prime_rehash_policy`` (max load factor 1, growth factor 2, ``__prime_list``) and where
``_Hashtable`` links a new node (``_M_insert_bucket_begin``) or relinks nodes when it rehashes
(``_M_rehash_aux``).  Checked against g++ 12 (``tests/test_cxx_unordered.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

_M = 0xFFFFFFFFFFFFFFFF
_MUL = (0xC6A4A793 << 32) + 0x5BD1E995
_SEED = 0xC70F6907
_FAST_BKT = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)
# libstdc++'s __prime_list (hashtable-aux.cc), the entries below 2**32
PRIMES = (
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 103, 109,
    113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293, 313, 337, 359, 383, 409,
    439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887, 953, 1031, 1109, 1193, 1289, 1381, 1493, 1613, 1741,
    1879, 2029, 2179, 2357, 2549, 2753, 2971, 3209, 3469, 3739, 4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949,
    7517, 8123, 8783, 9497, 10273, 11113, 12011, 12983, 14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281,
    26267, 28411, 30727, 33223, 35933, 38873, 42043, 45481, 49201, 53201, 57557, 62233, 67307, 72817, 78779,
    85229, 92203, 99733, 107897, 116731, 126271, 136607, 147793, 159871, 172933, 187091, 202409, 218971, 236897,
    256279, 277261, 299951, 324503, 351061, 379787, 410857, 444487, 480881, 520241, 562841, 608903, 658753,
    712697, 771049, 834181, 902483, 976369, 1056323, 1142821, 1236397, 1337629, 1447153, 1565659, 1693859,
    1832561, 1982627, 2144977, 2320627, 2510653, 2716249, 2938679, 3179303, 3439651, 3721303, 4026031, 4355707,
    4712381, 5098259, 5515729, 5967347, 6456007, 6984629, 7556579, 8175383, 8844859, 9569143, 10352717,
    11200489, 12117689, 13109983, 14183539, 15345007, 16601593, 17961079, 19431899, 21023161, 22744717,
    24607243, 26622317, 28802401, 31160981, 33712729, 36473443, 39460231, 42691603, 46187573, 49969847,
    54061849, 58488943, 63278561, 68460391, 74066549, 80131819, 86693767, 93793069, 101473717, 109783337,
    118773397, 128499677, 139022417, 150406843, 162723577, 176048909, 190465427, 206062531, 222936881,
    241193053, 260944219, 282312799, 305431229, 330442829, 357502601, 386778277, 418451333, 452718089,
    489790921, 529899637, 573292817, 620239453, 671030513, 725980837, 785430967, 849749479, 919334987,
    994618837, 1076067617, 1164186217, 1259520799, 1362662261, 1474249943, 1594975441, 1725587117, 1866894511,
    2019773507, 2185171673, 2364114217, 2557710269, 2767159799, 2993761039, 3238918481, 3504151727, 3791104843,
    4101556399, 4294967291
)


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def std_hash(text: str) -> int:
    """``std::hash<std::string>`` of libstdc++ on a 64-bit machine (``_Hash_bytes``)."""
    buf = text.encode("utf-8")
    n = len(buf)
    h = (_SEED ^ (n * _MUL)) & _M
    aligned = n & ~7
    for i in range(0, aligned, 8):
        data = (_shift_mix((int.from_bytes(buf[i:i + 8], "little") * _MUL) & _M) * _MUL) & _M
        h = ((h ^ data) * _MUL) & _M
    if n & 7:
        h = ((h ^ int.from_bytes(buf[aligned:], "little")) * _MUL) & _M
    h = (_shift_mix(h) * _MUL) & _M
    return _shift_mix(h)


class _Policy:
    """``_Prime_rehash_policy`` with max load factor 1."""

    def __init__(self) -> None:
        self.next_resize = 0

    def next_bkt(self, n: int) -> int:
        if n < len(_FAST_BKT):
            if n == 0:
                return 1
            self.next_resize = _FAST_BKT[n]
            return _FAST_BKT[n]
        lo, hi = 6, len(PRIMES) - 1
        while lo < hi:                  # std::lower_bound
            mid = (lo + hi) // 2
            if PRIMES[mid] < n:
                lo = mid + 1
            else:
                hi = mid
        self.next_resize = PRIMES[lo]
        return PRIMES[lo]

    def need_rehash(self, n_bkt: int, n_elt: int, n_ins: int) -> int:
        """The new bucket count, or 0."""
        if n_elt + n_ins > self.next_resize:
            min_bkts = float(max(n_elt + n_ins, 0 if self.next_resize else 11))
            if min_bkts >= n_bkt:
                return self.next_bkt(max(math.floor(min_bkts) + 1, n_bkt * 2))
            self.next_resize = n_bkt
        return 0


def unordered_order(keys: Sequence[str]) -> list[int]:
    """Indices of ``keys`` (distinct, inserted in this order) in the map's iteration order."""
    hashes = [std_hash(k) for k in keys]
    nxt: dict[int, int | None] = {}        # node -> next node; -1 is _M_before_begin
    nxt[-1] = None
    n_bkt = 1
    buckets: dict[int, int] = {}           # bucket -> the node before its first node
    policy = _Policy()
    for i, h in enumerate(hashes):
        grow = policy.need_rehash(n_bkt, i, 1)
        if grow:                            # _M_rehash_aux: relink every node into the new buckets
            n_bkt = grow
            buckets = {}
            p = nxt[-1]
            nxt[-1] = None
            bbegin_bkt = -1
            while p is not None:
                following = nxt[p]
                b = hashes[p] % n_bkt
                if b not in buckets:
                    nxt[p] = nxt[-1]
                    nxt[-1] = p
                    buckets[b] = -1
                    if nxt[p] is not None:
                        buckets[bbegin_bkt] = p
                    bbegin_bkt = b
                else:
                    before = buckets[b]
                    nxt[p] = nxt[before]
                    nxt[before] = p
                p = following
        b = h % n_bkt                       # _M_insert_bucket_begin
        if b in buckets:
            before = buckets[b]
            nxt[i] = nxt[before]
            nxt[before] = i
        else:
            nxt[i] = nxt[-1]
            nxt[-1] = i
            if nxt[i] is not None:
                buckets[hashes[nxt[i]] % n_bkt] = i
            buckets[b] = -1
    out = []
    p = nxt[-1]
    while p is not None:
        out.append(p)
        p = nxt[p]
    return out
