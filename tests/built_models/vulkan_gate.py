"""Whether a check script may run its Vulkan backend here.

The convention of tools/kiln/check_lib.sh's have_vulkan, for the Python
checks of this folder: without a Vulkan device a run is skipped (ctest's
exit code 77), unless KILN_REQUIRE_VULKAN=1 or CI=true demand a device.
"""
import os
import re
import subprocess


def vulkan_gate(kiln):
    """None when `kiln info` lists a device, else the exit code to return."""
    info = subprocess.run([kiln, "info"], capture_output=True, text=True).stdout
    if re.search(r"^device 0", info, re.M):
        return None
    if os.environ.get("KILN_REQUIRE_VULKAN", "0") != "0" or os.environ.get("CI") == "true":
        print("FAIL no Vulkan device, and KILN_REQUIRE_VULKAN=1 or CI=true require one")
        return 1
    print("note: no Vulkan device; skipped")
    return 77
