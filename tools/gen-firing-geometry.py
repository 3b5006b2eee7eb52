#!/usr/bin/env python3
"""Writes crates/server/assets/FiringGeometry.png: the 50,991-byte PNG of the reference
file test, drawn deterministically (a firing-range geometry: target rings and
trajectories) so the built-in server needs no external file.

The image data is stored uncompressed (zlib level 0 is byte-for-byte deterministic
across zlib versions) and a tEXt chunk pads the file to the exact size.
Run: python3 tools/gen-firing-geometry.py
"""
import math, struct, zlib, pathlib

TARGET_SIZE = 50_991
W, H = 128, 128

def chunk(kind, data):
    c = struct.pack(">I", len(data)) + kind + data
    return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

rows = []
cx, cy = 92, 64
for y in range(H):
    row = bytearray([0])  # filter: none
    for x in range(W):
        r = math.hypot(x - cx, y - cy)
        ring = int(r) // 6 % 2
        # trajectories from the firing point at (8, 120)
        traj = any(abs((y - 120) + (x - 8) * k - 0.004 * (x - 8) ** 2 * k * 8) < 1.2 for k in (0.35, 0.6, 0.9))
        if traj:
            px = (200, 30, 30)
        elif r < 40:
            px = (240, 240, 240) if ring else (20, 60, 140)
        else:
            px = (180 + (x * 7 + y * 3) % 40, 200 + (x * 5) % 30, 170 + (y * 11) % 50)
        row += bytes(px)
    rows.append(bytes(row))
raw = b"".join(rows)
ihdr = struct.pack(">IIBBBBB", W, H, 8, 2, 0, 0, 0)
body = chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 0))
sig = b"\x89PNG\r\n\x1a\n"
end = chunk(b"IEND", b"")
fixed = len(sig) + len(body) + len(end) + 12  # 12: tEXt chunk framing
keyword = b"Comment\x00"
pad = TARGET_SIZE - fixed - len(keyword)
assert pad >= 0, pad
text = keyword + (b"stampede reference file test. " * (pad // 30 + 1))[:pad]
png = sig + body + chunk(b"tEXt", text) + end
assert len(png) == TARGET_SIZE, len(png)
out = pathlib.Path(__file__).resolve().parent.parent / "crates/server/assets/FiringGeometry.png"
out.write_bytes(png)
print(out, len(png))
