// Fitting TMModel's parameters (plugins/tmmodel/model.h) to the
// micro-benchmarks' measurements by least squares, level by level, with a
// quarter of the measurements held out to check the fitted model on.
#pragma once

#include <vector>

#include "engine/base/status.h"
#include "plugins/tmmodel/model.h"
#include "tools/tune/microbench.h"

namespace kiln::tune {

// Minimizes |X b - y|^2 + ridge |b[1..]|^2 (the first column, the
// intercept, is not penalized). Errors: kInvalidArgument for ragged or
// empty input, kFailedPrecondition for a singular system.
StatusOr<std::vector<double>> least_squares(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                                            double ridge);

// A measurement with the model's prediction for it.
struct Prediction {
  double predicted = 0;
  double measured = 0;
  bool held_out = false;
};

struct Fit {
  tmmodel::Profile profile;  // identity fields as given, parameters and Spearman filled in
  std::vector<Prediction> chase_image, chase_buffer, stream;
};

// True for the measurements kept out of the fit (every fourth).
inline bool held_out(size_t index) { return index % 4 == 3; }

// Eq. 1 per storage from the chase runs, then Eq. 2 (D, C and the stream
// scale) from the stream runs of the fewest work groups, then Eq. 6 (K_G
// per group size) from the rest; Spearman on the held-out runs at the
// thread level (per storage) and integrated (Eq. 7, all stream runs).
// Errors: kInvalidArgument when there are too few runs to fit.
StatusOr<Fit> fit_profile(const std::vector<ChaseRun>& chase, const std::vector<StreamRun>& stream,
                          tmmodel::Profile identity);

}  // namespace kiln::tune
