// libFuzzer target: the text IR parser (engine/ir/text.h) on arbitrary text.
//
// A graph the parser accepts is verified, printed and parsed again: the
// printed form of anything the parser accepted must parse back (print and
// parse are each other's inverse, which the golden tests rely on) and print
// the same. Verifier errors are fine; crashes, hangs and a printed form
// that does not round-trip are findings.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/ir/text.h"
#include "engine/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::ir::ParseOptions options;
  options.allow_elided_constants = size > 0 && (data[0] & 1);
  auto graph = kiln::ir::parse_graph(text, options);
  if (!graph.ok()) return 0;
  (void)kiln::ir::verify_graph(**graph);
  const std::string printed = kiln::ir::print_graph(**graph);
  auto again = kiln::ir::parse_graph(printed);
  if (!again.ok()) __builtin_trap();
  if (kiln::ir::print_graph(**again) != printed) __builtin_trap();
  return 0;
}
