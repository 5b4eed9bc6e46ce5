// The GLSL kernel templates of shaders/, embedded at build time, and the
// one substitution step that turns a template into kernel text.
//
// Kernel bodies live as files in shaders/ (`<family>[_<variant>].comp` for
// a kernel's main(), `.glsl` for helper functions) so that they read, diff
// and lint as GLSL; the build embeds them (cmake/KilnEmbedShaders.cmake) and
// the lowerings fill them in. Template syntax (shaders/README.md):
//   @NAME@            replaced by the text of argument NAME. On a line of its
//                     own (blanks aside) it stands for whole lines: the line
//                     is replaced by the text, a block of zero or more lines
//                     (a missing final newline is added), each non-empty
//                     line indented by the blanks before the placeholder.
//   //@if NAME        keeps the lines up to the matching //@else or //@end
//   //@else           when flag NAME is set, else the ones after //@else;
//   //@end           the directive lines themselves are dropped. Nestable.
//   //! text          a template comment: dropped (file headers, notes on
//                     placeholders). Plain // comments are kept.
//   //@section NAME   splits a file of helpers into parts filled one at a
//                     time by the name "file.glsl#NAME" (a section runs to
//                     the next //@section; text before the first is a header).
// NAME is [A-Za-z_][A-Za-z0-9_]*; '@' is reserved for placeholders. Filling
// is strict: every placeholder and flag on a kept line needs an argument,
// and every argument must be mentioned somewhere in the template, so a
// template and its caller cannot drift apart silently.
//
// Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "engine/base/status.h"

namespace kiln::planner {

// One embedded file of shaders/: its file name ("gemm_tile.comp") and text.
struct EmbeddedShader {
  std::string_view name;
  std::string_view text;
};

// Every file of shaders/, sorted by name; static storage (the views never
// dangle). Defined in the generated embedded_shaders.cc.
std::span<const EmbeddedShader> embedded_shaders();

// The arguments of one template fill: placeholder texts and flags.
class ShaderArgs {
 public:
  ShaderArgs& set(const std::string& name, std::string text);
  ShaderArgs& set(const std::string& name, int64_t value);  // decimal text
  ShaderArgs& flag(const std::string& name, bool on);

  const std::map<std::string, std::string>& texts() const { return texts_; }
  const std::map<std::string, bool>& flags() const { return flags_; }

 private:
  std::map<std::string, std::string> texts_;
  std::map<std::string, bool> flags_;
};

// The text of embedded template `name` filled with `args`.
// `name` is a file of shaders/ or "file#section".
// Errors: kNotFound for an unknown template or section; kInvalidArgument for a
// placeholder or flag without an argument, an argument the template does
// not mention, or malformed directives (unbalanced //@if, a stray @).
StatusOr<std::string> try_fill_shader(std::string_view name, const ShaderArgs& args);

// Fills template text `text` (what try_fill_shader does with a file's
// contents); `what` names it in errors. Same errors as try_fill_shader but
// kNotFound.
StatusOr<std::string> fill_template_text(std::string_view what, std::string_view text, const ShaderArgs& args);

// try_fill_shader for the planner's own templates, where an error is a bug
// (a template and its lowering out of step; shader_template_test fills
// every template): prints the error and aborts instead of returning it.
std::string fill_shader(std::string_view name, const ShaderArgs& args = {});

}  // namespace kiln::planner
