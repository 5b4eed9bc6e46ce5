// test.target-info: a pass that reads the device the pipeline compiles for
// (kiln_host_api_t::target_info, ABI 1.3) and records it as statistics, for
// tests/plugin_target/target_test.cc: "has-target" 1 or 0, and with a
// device its shared memory, compute units, subgroup size, workgroup and
// image limits, cooperative matrix and fp16 flags, vendor and the length of
// its name. It edits nothing.
#include <cstring>

#include "kiln/kiln_plugin.hpp"

namespace {

using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;

class RecordTarget : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    const auto target = g.target_info();
    rw.add_statistic("has-target", target ? 1 : 0);
    if (!target) return;
    rw.add_statistic("shared-memory-bytes", static_cast<int64_t>(target->shared_memory_bytes));
    rw.add_statistic("compute-units", target->compute_units);
    rw.add_statistic("subgroup-size", target->subgroup_size);
    rw.add_statistic("max-workgroup-invocations", target->max_workgroup_invocations);
    rw.add_statistic("max-image-dimension-2d", target->max_image_dimension_2d);
    rw.add_statistic("cooperative-matrix", target->cooperative_matrix);
    rw.add_statistic("fp16-arithmetic", target->fp16_arithmetic);
    rw.add_statistic("vendor-id", target->vendor_id);
    rw.add_statistic("device-name-length", static_cast<int64_t>(strnlen(target->device_name, sizeof(target->device_name))));
  }
};

RecordTarget record_target;
const kiln_pass_t record_target_pass =
    kiln::plugin::make_pass(record_target, "test.target-info", "records the device's facts as statistics");
const kiln_pass_t* const passes[] = {&record_target_pass};
const kiln_plugin_t plugin = kiln::plugin::make_plugin("test.target", "1.0.0", passes, 1);

}  // namespace

KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, plugin)
