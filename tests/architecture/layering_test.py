#!/usr/bin/python3
"""Dependencies run one way: each component may include only the components
below it (the picture in ../../README.md and ../shared/design/architecture.md):

    base < ir < ops < {reference runtime, registry} < planner, platform
         < Vulkan runtime < session < api;    frontends over ops;
    the tools use the public API (kiln.hpp) and engine/base's Status only;
    plugins see only include/ (the public ABI) and their own directory,
    except the OpenCL backend, built from Kiln's planner (PLUGIN_EXCEPTIONS).

Every #include "..." of a non-test source is checked against its
component's allowed prefixes; a violation names the file, the line and the
rule. Tests (*_test.cc, testing/, testdata/) may reach anywhere.
Usage: layering_test.py [REPO_ROOT]
"""
import os
import re
import sys

ENGINE_CORE = ["engine/base/", "engine/ir/", "engine/ops/"]
# component directory -> include prefixes it may use (besides its own and
# the public include/ headers, "kiln/...")
RULES = [
    ("engine/base/", ["engine/base/"]),
    ("engine/ir/", ["engine/base/"]),
    ("engine/ops/", ["engine/base/", "engine/ir/"]),
    ("engine/runtime/vulkan/", ENGINE_CORE + ["engine/runtime/", "planner/", "platform/vulkan/"]),
    ("engine/runtime/", ENGINE_CORE),
    ("engine/registry/", ENGINE_CORE + ["engine/runtime/reference_executor.h", "engine/runtime/backend.h",
                                        "engine/runtime/run_stats.h"]),
    ("engine/session/", ENGINE_CORE + ["engine/registry/", "engine/runtime/", "planner/", "platform/vulkan/"]),
    ("planner/", ENGINE_CORE),
    ("platform/vulkan/", ["engine/base/"]),
    ("frontends/onnx/", ENGINE_CORE),
    ("api/", ENGINE_CORE + ["engine/registry/", "engine/runtime/", "engine/session/", "planner/", "platform/vulkan/",
                            "frontends/onnx/"]),
    # The tool is a client of libkiln (kiln.hpp): of the engine it sees only
    # engine/base's Status and JSON writer, which it links on its own.
    ("tools/kiln/", ["engine/base/status.h", "engine/base/json_writer.h", "tools/common/"]),
    ("tools/common/", []),
]
# Plugins built from Kiln's own sources rather than against the ABI alone:
# the OpenCL backend plans with the planner and runs host steps on the
# reference kernels, as the Vulkan runtime does (it receives the graph as
# text through kiln_host_api_t::graph_text; plugins/opencl/README.md).
PLUGIN_EXCEPTIONS = [
    ("plugins/opencl/", ENGINE_CORE + ["engine/runtime/reference_executor.h", "planner/"]),
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def is_test(path):
    name = os.path.basename(path)
    parts = path.split("/")
    return name.endswith(("_test.cc", "_test.c", "_test_util.h")) or "testing" in parts or "testdata" in parts \
        or "examples" in parts


def allowed(path, header):
    if header.startswith("kiln/"):
        return True, None
    for component, prefixes in PLUGIN_EXCEPTIONS:
        if path.startswith(component):
            ok = header.startswith(component) or any(header.startswith(p) for p in prefixes)
            return ok, f"{component} may include {', '.join([component] + prefixes)}"
    if path.startswith("plugins/"):
        own = "/".join(path.split("/")[:2]) + "/"
        return header.startswith(own), "plugins see only include/ and their own directory"
    for component, prefixes in RULES:
        if path.startswith(component):
            ok = header.startswith(component) or any(header.startswith(p) for p in prefixes)
            return ok, f"{component} may include {', '.join([component] + prefixes)}"
    return True, None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    violations = []
    checked = 0
    for top in ["engine", "planner", "platform", "frontends", "api", "tools", "plugins"]:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".h", ".cc", ".c", ".hpp")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                if is_test(rel):
                    continue
                checked += 1
                with open(os.path.join(root, rel), encoding="utf-8") as src:
                    for number, line in enumerate(src, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        ok, rule = allowed(rel, m.group(1))
                        if not ok:
                            violations.append(f"{rel}:{number}: includes \"{m.group(1)}\" ({rule})")
    for v in violations:
        print(v)
    print(f"layering: {checked} files checked, {len(violations)} violations")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
