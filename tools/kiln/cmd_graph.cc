// `kiln graph`: the imported graph as Graphviz or as Kiln's text IR.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "engine/ir/text.h"
#include "frontends/onnx/onnx_importer.h"
#include "tools/kiln/cli_args.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/pipeline_flags.h"

namespace kiln::cli {

namespace {

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Nodes are boxes (op + name); edges carry the value's dtype and shape.
// Graph inputs are ellipses; constants are folded into their consumer's label
// count to keep large models readable. Sub-graphs become clusters.
void write_region(const ir::Graph& g, ir::RegionId rid, std::ostringstream& out, int& cluster) {
  const ir::Region& r = g.region(rid);
  for (ir::ValueId in : r.inputs)
    out << "  v" << in << " [shape=ellipse, label=\"" << dot_escape(g.value(in).name) << "\\n"
        << dtype_name(g.value(in).dtype) << g.value(in).shape.to_string() << "\"];\n";
  for (ir::NodeId nid : r.nodes) {
    const ir::Node& n = g.node(nid);
    int consts = 0;
    for (ir::ValueId in : n.inputs) consts += in != ir::kNoValue && g.value(in).is_constant();
    out << "  n" << nid << " [shape=box, label=\"" << dot_escape(n.op) << "\\n" << dot_escape(n.name)
        << (consts ? "\\n+" + std::to_string(consts) + " const" : "") << "\"];\n";
    for (const auto& [key, a] : n.attrs) {
      if (a.kind != ir::AttrKind::kGraph) continue;
      out << "  subgraph cluster_" << cluster++ << " {\n  label=\"" << dot_escape(n.name + "." + key) << "\";\n";
      write_region(g, a.region, out, cluster);
      out << "  }\n";
    }
  }
  for (ir::NodeId nid : r.nodes) {
    const ir::Node& n = g.node(nid);
    for (ir::ValueId in : n.inputs) {
      if (in == ir::kNoValue || g.value(in).is_constant()) continue;
      const ir::Value& v = g.value(in);
      const std::string src = v.producer != ir::kNoNode ? "n" + std::to_string(v.producer) : "v" + std::to_string(in);
      out << "  " << src << " -> n" << nid << " [label=\"" << dtype_name(v.dtype) << v.shape.to_string() << "\"];\n";
    }
  }
  for (ir::ValueId o : r.outputs) {
    const ir::Value& v = g.value(o);
    out << "  out" << o << " [shape=ellipse, style=dashed, label=\"" << dot_escape(v.name) << "\"];\n";
    const std::string src = v.producer != ir::kNoNode ? "n" + std::to_string(v.producer) : "v" + std::to_string(o);
    out << "  " << src << " -> out" << o << ";\n";
  }
}

Status write_text(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return ok_status();
  }
  std::ofstream f(path, std::ios::binary);
  if (!f) return not_found("cannot write '" + path + "'");
  f << text;
  return f ? ok_status() : data_loss("short write to '" + path + "'");
}

}  // namespace

int cmd_graph(const std::vector<std::string>& argv) {
  std::vector<std::string> value_flags = {"dot", "text"};
  value_flags.insert(value_flags.end(), kPipelineValueFlags.begin(), kPipelineValueFlags.end());
  auto args = Args::parse(argv, value_flags, {"full-constants"});
  if (!args.ok()) return fail(args.status());
  if (args->positionals().size() != 1) return usage_error("kiln graph MODEL --dot FILE: expected exactly one MODEL");
  if (!args->has("dot") && !args->has("text")) return usage_error("kiln graph: give --dot FILE and/or --text FILE");
  auto graph = onnx::import_model_file(args->positionals()[0]);
  if (!graph.ok()) return fail(graph.status());
  // The graph after the pass pipeline, so plugins' effects are visible
  // (--passes none shows the graph as imported).
  auto records = run_pipeline_from_flags(*args, **graph);
  if (!records.ok()) return fail(records.status());
  const ir::Graph& g = **graph;
  if (args->has("dot")) {
    std::ostringstream out;
    out << "digraph \"" << dot_escape(g.name) << "\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\"];\n";
    int cluster = 0;
    write_region(g, ir::kMainRegion, out, cluster);
    out << "}\n";
    Status s = write_text(args->get("dot"), out.str());
    if (!s.ok()) return fail(s);
  }
  if (args->has("text")) {
    ir::PrintOptions po;
    po.elide_constants_over = args->has("full-constants") ? -1 : 16;
    Status s = write_text(args->get("text"), ir::print_graph(g, po));
    if (!s.ok()) return fail(s);
  }
  return 0;
}

}  // namespace kiln::cli
