#!/usr/bin/env bash
# CI test of the game_frame example (issue 17): MODEL through game_frame
# with OPTIONS (--frames, --mode, --buffers) and validation with
# synchronization validation on,
# which must report no message; every kept frame's output must match
# kiln_session_run on the same input (the app checks that); the last kept
# frame's output must match `kiln run` on the same input (compare_npy.py's
# tolerance); and the PNGs must be well-formed (chunk CRCs, zlib Adler-32,
# size), which checks the example's own encoder.
# Usage: game_frame_test.sh GAME_FRAME KILN MODEL [OPTIONS...]
set -u
game=$1
kiln=$2
model=$3
shift 3
py=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$game" "$model" "$@" --validate --png-dir "$tmp" --dump "$tmp"
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"  # 77: no Vulkan device (a skip)

names=$("$py" -c "
import onnx, sys
m = onnx.load(sys.argv[1], load_external_data=False)
print(m.graph.input[0].name, m.graph.output[0].name)" "$model") || exit 1
read -r input output <<<"$names"
"$kiln" run "$model" --backend vulkan --input "$input=$tmp/input.npy" --output "$output=$tmp/kiln_run.npy" \
  >"$tmp/kiln_run.log" 2>&1 || { cat "$tmp/kiln_run.log"; exit 1; }
echo -n "game_frame's last kept frame vs kiln run: "
"$py" "$here/../../tests/models/compare_npy.py" "$tmp/output.npy" "$tmp/kiln_run.npy" || exit 1

"$py" - "$tmp"/frame_*.png <<'PY' || exit 1
import struct, sys, zlib
assert len(sys.argv) == 4, f"want 3 PNGs (the first, middle and last frames), got {sys.argv[1:]}"
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
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
    assert (depth, colour) == (8, 6) and len(raw) == h * (1 + 4 * w), path
    rows = [raw[y * (1 + 4 * w):(y + 1) * (1 + 4 * w)] for y in range(h)]
    assert all(r[0] == 0 for r in rows), f"{path}: unexpected filter byte"
    assert len(set(rows)) > h // 4, f"{path}: the image is nearly uniform"
print(f"PNGs ok: {', '.join(p.rsplit('/', 1)[1] for p in sys.argv[1:])}")
PY
