// What the driver says about each compiled pipeline — registers, spills,
// shared memory, instruction counts — through
// VK_KHR_pipeline_executable_properties, for finding why one kernel variant
// runs slower than another (occupancy lost to registers is invisible in
// timestamps). A diagnostic, off by default: capturing asks the driver to
// keep statistics it would otherwise drop.
//
// $KILN_PIPELINE_STATS=<file> turns it on for devices Kiln creates (a
// wrapped host device has it where the host enabled the extension and its
// pipelineExecutableInfo feature): each pipeline created appends one line
// per statistic to the file,
//   <kernel name> TAB <executable name> TAB <statistic name> TAB <value>
// and a device without the extension appends one "# ..." line saying so.
#pragma once

#include <string>
#include <vector>

#include "platform/vulkan/device.h"

namespace kiln::vk {

struct PipelineStatistic {
  std::string executable;  // the driver's name for the compiled stage ("Compute Shader")
  std::string name;        // "Register Count", "Binary Size", ...
  std::string value;       // the number as text (bools as true/false)
};

// The file named by $KILN_PIPELINE_STATS ("" when unset or empty), read
// at each call (devices and pipelines are created rarely).
std::string pipeline_statistics_file();

// The statistics of `pipeline` (created with
// VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR on a device where
// enabled().pipeline_executable_info holds). Errors: VkResult errors.
StatusOr<std::vector<PipelineStatistic>> read_pipeline_statistics(Device& device, VkPipeline pipeline);

// Appends `stats` of kernel `name` to pipeline_statistics_file() (one write
// under a lock: pipelines are created on several threads). Best effort: a
// file that cannot be opened is reported once on stderr.
void append_pipeline_statistics(const std::string& name, const std::vector<PipelineStatistic>& stats);

// Appends "# <line>" to the file (the device has no statistics, ...).
void note_pipeline_statistics(const std::string& line);

}  // namespace kiln::vk
