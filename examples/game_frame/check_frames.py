#!/usr/bin/python3
"""Checks game_frame's PNGs: each is well-formed (signature, chunk CRCs, zlib
Adler-32, size, filter bytes) — a test of the example's own encoder — and
the last one is the composite of the dumped model input with MODEL_OUTPUT
drawn over it (shaders/composite.comp redone in numpy), so the image the
game shows matches the model run another way (`kiln run`).

Usage: check_frames.py INPUT.npy MODEL_OUTPUT.npy FRAME.png...  (FRAMEs in
frame order; INPUT.npy is the last frame's model input)
"""
import struct
import sys
import zlib

import numpy as np


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    pos, chunks = 8, {}
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert crc == zlib.crc32(kind + body), f"{path}: bad CRC in {kind}"
        chunks[kind] = body
        pos += 12 + n
    w, h, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    raw = zlib.decompress(chunks[b"IDAT"])  # checks the Adler-32
    assert (depth, colour) == (8, 6) and len(raw) == h * (1 + 4 * w), f"{path}: wrong size or format"
    rows = np.frombuffer(raw, np.uint8).reshape(h, 1 + 4 * w)
    assert (rows[:, 0] == 0).all(), f"{path}: unexpected filter byte"
    return rows[:, 1:].reshape(h, w, 4)


def composite(x, logits):
    """composite.comp: the image un-normalized, a darkened panel at the
    bottom, and bars for the top 5 classes (relative probability, colour by
    class index)."""
    _, h, w = x.shape
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    deviation = np.array([0.229, 0.224, 0.225], np.float32)
    rgb = x.transpose(1, 2, 0) * deviation + mean
    top = np.argsort(-logits, kind="stable")[:5]  # ties: the lower class first, as the shader
    share = np.exp(logits[top] - logits[top[0]])
    bar, margin = max(3, h // 28), w // 16
    gap = max(1, bar // 2)
    first = h - margin - 5 * (bar + gap)
    for y in range(h):
        for xx in range(w):
            if not (y + gap >= first and y < h - margin + gap and xx + gap >= margin and xx < w - margin + gap):
                continue
            rgb[y, xx] *= 0.3
            row = (y + gap - first) // (bar + gap)
            in_bar = y >= first and (y - first) % (bar + gap) < bar and margin <= xx < w - margin
            if in_bar and row < 5 and xx < margin + (w - 2 * margin) * share[row]:
                c = top[row]
                rgb[y, xx] = 0.55 + 0.45 * np.cos(2 * np.pi * ((c * 0.618034) % 1.0 + np.array([0.0, 0.33, 0.67])))
    return np.round(np.clip(rgb, 0, 1) * 255).astype(np.int32)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    x = np.load(sys.argv[1])[0]
    logits = np.load(sys.argv[2]).reshape(-1)
    frames = [read_png(p) for p in sys.argv[3:]]
    for path, frame in zip(sys.argv[3:], frames):
        assert len({frame[y].tobytes() for y in range(frame.shape[0])}) > frame.shape[0] // 4, \
            f"{path}: the image is nearly uniform"
    got = frames[-1][:, :, :3].astype(np.int32)
    want = composite(x, logits)
    delta = np.abs(got - want).max(axis=2)
    off = int((delta > 2).sum())  # rounding aside, only a bar's last pixel on each of its rows may differ
    allowed = 5 * max(3, got.shape[0] // 28)
    print(f"{len(frames)} PNGs well-formed; the last one vs its composite redone from the model output: "
          f"{off} of {delta.size} pixels differ by more than 2/255 (max {int(delta.max())})")
    sys.exit(0 if off <= allowed else 1)


if __name__ == "__main__":
    main()
