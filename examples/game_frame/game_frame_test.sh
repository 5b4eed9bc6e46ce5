#!/usr/bin/env bash
# CI test of the game_frame example (issue 17): MODEL through game_frame
# with OPTIONS (--frames, --mode, --buffers) and validation with
# synchronization validation on,
# which must report no message; every kept frame's output must match
# kiln_session_run on the same input (the app checks that); the last kept
# frame's output must match `kiln run` on the same input (compare_npy.py's
# tolerance), and its image the composite of `kiln run`'s output
# (check_frames.py); and the PNGs must be well-formed (chunk CRCs, zlib
# Adler-32, size), which checks the example's own encoder.
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

# The PNGs are well-formed, and the last frame is what the game's composite
# makes of `kiln run`'s output.
"$py" "$here/check_frames.py" "$tmp/input.npy" "$tmp/kiln_run.npy" "$tmp"/frame_*.png
