// `kiln info --model`: the device model that `kiln tune` fitted (TMModel,
// plugins/tmmodel), reported from its profile — the fitted parameters as
// text, and the measurements against the model's predictions as an SVG
// chart:
//   1. the pointer chases (thread level, Eq. 1): measured against predicted
//      latency per run, image and buffer, held-out runs hollow;
//   2. one work group of G invocations (warp level, Eq. 2): latency per
//      access against G for each access pattern and storage;
//   3. 1..N work groups of G (work-group level, Eq. 4-7): latency per access
//      against the number of work groups, per G and storage (row pattern);
// measured points, predicted lines. The profile is the JSON file `kiln tune`
// writes (format kiln-tmmodel-profile-v1).
#pragma once

#include <string>

#include "engine/base/status.h"
#include "tools/kiln/json_reader.h"

namespace kiln::cli {

// The fitted parameters and the fit's quality, a few lines of text.
// Errors: kInvalidArgument naming what the profile lacks.
StatusOr<std::string> tmmodel_report_text(const JsonValue& profile);

// The SVG document. Errors: kInvalidArgument naming a missing or malformed
// field (a profile without measurements: a fixture, or not from kiln tune).
StatusOr<std::string> tmmodel_report_svg(const JsonValue& profile);

}  // namespace kiln::cli
