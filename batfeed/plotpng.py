"""Minimal PNG line charts with numpy and zlib only (no matplotlib in batfeed's environment).

:func:`line_chart` draws one or more series (polylines or step curves) on linear or log10 axes,
with ticks, a title, axis labels and a legend written in a built-in 5×7 bitmap font (upper-case
letters, digits and a few signs; lower case is drawn upper case).  :func:`write_png` writes an
RGB array as an 8-bit truecolour PNG (zlib-compressed scanlines, filter 0).
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

_GLYPHS = {
    "0": "01110 10001 10011 10101 11001 10001 01110", "1": "00100 01100 00100 00100 00100 00100 01110",
    "2": "01110 10001 00001 00010 00100 01000 11111", "3": "11110 00001 00001 01110 00001 00001 11110",
    "4": "00010 00110 01010 10010 11111 00010 00010", "5": "11111 10000 11110 00001 00001 10001 01110",
    "6": "00110 01000 10000 11110 10001 10001 01110", "7": "11111 00001 00010 00100 01000 01000 01000",
    "8": "01110 10001 10001 01110 10001 10001 01110", "9": "01110 10001 10001 01111 00001 00010 01100",
    "A": "01110 10001 10001 11111 10001 10001 10001", "B": "11110 10001 10001 11110 10001 10001 11110",
    "C": "01110 10001 10000 10000 10000 10001 01110", "D": "11100 10010 10001 10001 10001 10010 11100",
    "E": "11111 10000 10000 11110 10000 10000 11111", "F": "11111 10000 10000 11110 10000 10000 10000",
    "G": "01110 10001 10000 10111 10001 10001 01111", "H": "10001 10001 10001 11111 10001 10001 10001",
    "I": "01110 00100 00100 00100 00100 00100 01110", "J": "00111 00010 00010 00010 00010 10010 01100",
    "K": "10001 10010 10100 11000 10100 10010 10001", "L": "10000 10000 10000 10000 10000 10000 11111",
    "M": "10001 11011 10101 10101 10001 10001 10001", "N": "10001 10001 11001 10101 10011 10001 10001",
    "O": "01110 10001 10001 10001 10001 10001 01110", "P": "11110 10001 10001 11110 10000 10000 10000",
    "Q": "01110 10001 10001 10001 10101 10010 01101", "R": "11110 10001 10001 11110 10100 10010 10001",
    "S": "01111 10000 10000 01110 00001 00001 11110", "T": "11111 00100 00100 00100 00100 00100 00100",
    "U": "10001 10001 10001 10001 10001 10001 01110", "V": "10001 10001 10001 10001 10001 01010 00100",
    "W": "10001 10001 10001 10101 10101 10101 01010", "X": "10001 10001 01010 00100 01010 10001 10001",
    "Y": "10001 10001 10001 01010 00100 00100 00100", "Z": "11111 00001 00010 00100 01000 10000 11111",
    " ": "00000 00000 00000 00000 00000 00000 00000", ".": "00000 00000 00000 00000 00000 01100 01100",
    ",": "00000 00000 00000 00000 01100 00100 01000", ":": "00000 01100 01100 00000 01100 01100 00000",
    "-": "00000 00000 00000 11111 00000 00000 00000", "+": "00000 00100 00100 11111 00100 00100 00000",
    "%": "11000 11001 00010 00100 01000 10011 00011", "(": "00010 00100 01000 01000 01000 00100 00010",
    ")": "01000 00100 00010 00010 00010 00100 01000", "/": "00000 00001 00010 00100 01000 10000 00000",
    "=": "00000 00000 11111 00000 11111 00000 00000", "_": "00000 00000 00000 00000 00000 00000 11111",
    "[": "01110 01000 01000 01000 01000 01000 01110", "]": "01110 00010 00010 00010 00010 00010 01110",
    "<": "00010 00100 01000 10000 01000 00100 00010", ">": "01000 00100 00010 00001 00010 00100 01000",
    "?": "01110 10001 00001 00010 00100 00000 00100", ";": "00000 01100 01100 00000 01100 00100 01000",
    "'": "00100 00100 01000 00000 00000 00000 00000",
}
FONT = {ch: np.array([[c == "1" for c in row] for row in rows.split()], dtype=bool) for ch, rows in _GLYPHS.items()}

WHITE, BLACK, GREY = (255, 255, 255), (0, 0, 0), (200, 200, 200)
COLOURS = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (255, 127, 14), (148, 103, 189), (140, 86, 75)]


def write_png(path: str | Path, rgb: np.ndarray) -> Path:
    """Write an (H, W, 3) uint8 array as a PNG file."""
    h, w, _ = rgb.shape
    raw = np.zeros((h, 1 + 3 * w), dtype=np.uint8)       # filter byte 0 ("none") before each scanline
    raw[:, 1:] = rgb.reshape(h, 3 * w)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + chunk(b"IEND", b""))
    path = Path(path)
    path.write_bytes(png)
    return path


class Canvas:
    def __init__(self, width: int, height: int):
        self.w, self.h = width, height
        self.px = np.full((height, width, 3), 255, dtype=np.uint8)

    def dot(self, x: float, y: float, colour: tuple[int, int, int], size: int = 1) -> None:
        xi, yi = int(round(x)), int(round(y))
        y0, y1, x0, x1 = max(yi - size // 2, 0), min(yi + (size + 1) // 2, self.h), max(xi - size // 2, 0), \
            min(xi + (size + 1) // 2, self.w)
        if y0 < y1 and x0 < x1:
            self.px[y0:y1, x0:x1] = colour

    def line(self, x0: float, y0: float, x1: float, y1: float, colour: tuple[int, int, int], width: int = 1) -> None:
        n = int(max(abs(x1 - x0), abs(y1 - y0)) * 2) + 1
        xs = np.rint(np.linspace(x0, x1, n)).astype(int)
        ys = np.rint(np.linspace(y0, y1, n)).astype(int)
        for dx in range(-(width // 2), width - width // 2):
            for dy in range(-(width // 2), width - width // 2):
                x, y = xs + dx, ys + dy
                ok = (x >= 0) & (x < self.w) & (y >= 0) & (y < self.h)
                self.px[y[ok], x[ok]] = colour

    def text(self, x: float, y: float, s: str, colour: tuple[int, int, int] = BLACK, scale: int = 1,
             anchor: str = "left") -> None:
        """Draw ``s`` with its top at ``y``; ``anchor`` left, centre or right of ``x``."""
        width = len(s) * 6 * scale
        x0 = int(x - (width / 2 if anchor == "centre" else width if anchor == "right" else 0))
        y0 = int(y)
        for i, ch in enumerate(s):
            glyph = FONT.get(ch.upper(), FONT["?"])
            big = np.kron(glyph, np.ones((scale, scale), dtype=bool))
            gx = x0 + i * 6 * scale
            ys, xs = np.nonzero(big)
            xs, ys = xs + gx, ys + y0
            ok = (xs >= 0) & (xs < self.w) & (ys >= 0) & (ys < self.h)
            self.px[ys[ok], xs[ok]] = colour

    def vtext(self, x: float, y: float, s: str, colour: tuple[int, int, int] = BLACK) -> None:
        """Vertical text (bottom to top) centred on ``y``, left edge at ``x``."""
        tmp = Canvas(len(s) * 6, 7)
        tmp.text(0, 0, s, colour)
        rot = np.rot90(tmp.px)
        h, w, _ = rot.shape
        y0 = int(y - h / 2)
        mask = (rot != 255).any(axis=2)
        ys, xs = np.nonzero(mask)
        xs, ys = xs + int(x), ys + y0
        ok = (xs >= 0) & (xs < self.w) & (ys >= 0) & (ys < self.h)
        self.px[ys[ok], xs[ok]] = rot[ys[ok] - y0, xs[ok] - int(x)]


def nice_ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    """About ``n`` round tick values covering [lo, hi]."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    out, t = [], start
    while t <= hi + step * 1e-9:
        out.append(0.0 if abs(t) < step * 1e-9 else t)
        t += step
    return out


def fmt_tick(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e5 or abs(v) < 1e-2:
        return f"{v:.0e}".replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")
    if float(v).is_integer():
        return str(int(v))
    return f"{v:g}"


def line_chart(path: str | Path, series: Sequence[tuple[str, Sequence[float], Sequence[float]]], *, title: str = "",
               xlabel: str = "", ylabel: str = "", xlog: bool = False, step: bool = False,
               vlines: Sequence[float] = (), ylim: tuple[float, float] | None = None,
               size: tuple[int, int] = (900, 520)) -> Path:
    """Write a PNG line chart: ``series`` = [(label, xs, ys)]; ``step``: post-step curves;
    ``xlog``: log10 x axis (non-positive x are dropped); ``vlines``: grey vertical markers."""
    width, height = size
    cv = Canvas(width, height)
    left, right, top, bottom = 90, 20, 44, 64
    pw, ph = width - left - right, height - top - bottom
    data = []
    for label, xs, ys in series:
        x = np.asarray(xs, dtype=float)
        y = np.asarray(ys, dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        if xlog:
            ok &= x > 0
        data.append((label, x[ok], y[ok]))
    allx = np.concatenate([d[1] for d in data]) if data else np.array([])
    ally = np.concatenate([d[2] for d in data]) if data else np.array([])
    if allx.size == 0:
        allx, ally = np.array([1.0, 10.0]), np.array([0.0, 1.0])
    tx = np.log10 if xlog else (lambda v: np.asarray(v, dtype=float))
    x0, x1 = float(tx(allx.min())), float(tx(allx.max()))
    if vlines and not xlog:
        x0, x1 = min(x0, *vlines), max(x1, *vlines)
    if x1 <= x0:
        x1 = x0 + 1
    y0, y1 = ylim if ylim else (float(min(ally.min(), 0.0)), float(ally.max()))
    if y1 <= y0:
        y1 = y0 + 1
    y1 += (y1 - y0) * 0.04

    def X(v: np.ndarray | float) -> np.ndarray:
        return left + (tx(v) - x0) / (x1 - x0) * pw

    def Y(v: np.ndarray | float) -> np.ndarray:
        return top + ph - (np.asarray(v, dtype=float) - y0) / (y1 - y0) * ph

    # grid and ticks
    for t in nice_ticks(y0, y1):
        if y0 <= t <= y1:
            py = float(Y(t))
            cv.line(left, py, left + pw, py, (235, 235, 235))
            cv.line(left - 5, py, left, py, BLACK)
            cv.text(left - 8, py - 3, fmt_tick(t), anchor="right")
    if xlog:
        xt = [10.0 ** k for k in range(math.floor(x0), math.ceil(x1) + 1)]
    else:
        xt = nice_ticks(x0, x1)
    for t in xt:
        v = math.log10(t) if xlog else t
        if x0 - 1e-9 <= v <= x1 + 1e-9:
            px_ = left + (v - x0) / (x1 - x0) * pw
            cv.line(px_, top, px_, top + ph, (235, 235, 235))
            cv.line(px_, top + ph, px_, top + ph + 5, BLACK)
            cv.text(px_, top + ph + 9, fmt_tick(t), anchor="centre")
    for v in vlines:
        px_ = float(X(v))
        cv.line(px_, top, px_, top + ph, GREY, 2)
    # curves
    for i, (_, x, y) in enumerate(data):
        if x.size == 0:
            continue
        c = COLOURS[i % len(COLOURS)]
        px_, py = X(x), Y(y)
        if step:
            for k in range(len(px_) - 1):
                cv.line(px_[k], py[k], px_[k + 1], py[k], c, 2)
                cv.line(px_[k + 1], py[k], px_[k + 1], py[k + 1], c, 2)
        elif len(px_) == 1:
            cv.dot(px_[0], py[0], c, 4)
        else:
            for k in range(len(px_) - 1):
                cv.line(px_[k], py[k], px_[k + 1], py[k + 1], c, 2)
    # frame, labels, legend
    for a, b, c_, d in ((left, top, left + pw, top), (left, top + ph, left + pw, top + ph),
                        (left, top, left, top + ph), (left + pw, top, left + pw, top + ph)):
        cv.line(a, b, c_, d, BLACK)
    cv.text(left + pw / 2, 12, title, scale=2, anchor="centre")
    cv.text(left + pw / 2, height - 22, xlabel, anchor="centre")
    cv.vtext(14, top + ph / 2, ylabel)
    for i, (label, _, _) in enumerate(data):
        c = COLOURS[i % len(COLOURS)]
        ly = top + 10 + 14 * i
        cv.line(left + 12, ly + 3, left + 36, ly + 3, c, 3)
        cv.text(left + 42, ly, label)
    return write_png(path, cv.px)
