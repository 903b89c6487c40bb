#!/usr/bin/env python3
"""tests/tools/pngstat.py: the structure of a PNG screenshot, for tests that check what a browser
drew without comparing pixels: its size, the share of non-white pixels, and in how many rows
each of the given colours appears and in how many pixels (within a tolerance).

    pngstat.py FILE [#rrggbb ...]   prints "WIDTH HEIGHT INK ROWS1 ROWS2 ... PIXELS1 PIXELS2 ..."

Reads 8-bit RGB or RGBA, non-interlaced PNGs (what Chromium writes) with the standard library
only. Exit 2 on a file it cannot read.
"""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError("unsupported PNG (depth %d, colour type %d)" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    i = 0
    for _ in range(h):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((a + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    try:
        w, h, bpp, rows = decode(sys.argv[1])
    except (OSError, ValueError, zlib.error, struct.error) as e:
        sys.stderr.write("pngstat: %s: %s\n" % (sys.argv[1], e))
        return 2
    colours = [tuple(int(c[k:k + 2], 16) for k in (1, 3, 5)) for c in sys.argv[2:]]
    ink, hits, pixels = 0, [0] * len(colours), [0] * len(colours)
    for line in rows:
        seen = [False] * len(colours)
        for x in range(0, w * bpp, bpp):
            r, g, b = line[x], line[x + 1], line[x + 2]
            if r < 235 or g < 235 or b < 235:
                ink += 1
                for k, (cr, cg, cb) in enumerate(colours):
                    if abs(r - cr) + abs(g - cg) + abs(b - cb) < 60:
                        seen[k] = True
                        pixels[k] += 1
        for k in range(len(colours)):
            hits[k] += seen[k]
    print(w, h, "%.4f" % (ink / float(w * h)), *(hits + pixels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
