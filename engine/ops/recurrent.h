// The attributes of ONNX's recurrent ops (LSTM, GRU, RNN), parsed once and
// checked, for the reference kernels (recurrent.cc) and for any backend that
// lowers the ops itself: one reading of the ONNX definition for all of them.
//
// The three ops share a form. Inputs: X, W, R, B, sequence_lens, initial_h
// (LSTM adds initial_c and the peepholes P); outputs Y (every step's hidden
// state), Y_h (the last one) and, for LSTM, Y_c (the last cell state). Each
// has `G` gates (LSTM 4 in the order i o f c, GRU 3 in z r h, RNN 1), each a
// block of hidden_size rows of W and R, and `F` activation functions per
// direction (LSTM f g h, GRU f g, RNN f).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"

namespace kiln::ops {

enum class RecurrentKind { kLstm, kGru, kRnn };

// One of the activation functions the ONNX recurrent ops name, with its
// alpha/beta (ONNX spells them "Sigmoid", "Tanh", ...; matched ignoring case).
struct RecurrentActivation {
  enum class Fn { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu,
                  kSoftsign, kSoftplus };
  Fn fn = Fn::kSigmoid;
  float alpha = 0.0f;
  float beta = 0.0f;
  std::string name;  // as the model spelled it

  double apply(double x) const;
};

struct RecurrentAttrs {
  RecurrentKind kind = RecurrentKind::kLstm;
  int64_t num_gates = 4;       // G
  int64_t num_functions = 3;   // F
  std::string direction;       // forward, reverse or bidirectional
  int64_t num_directions = 1;
  int64_t hidden_size = -1;    // -1: not given, read R's last dim
  int64_t layout = 0;          // 0: X [T, B, I]; 1: X [B, T, I]
  bool has_clip = false;
  float clip = 0.0f;
  bool input_forget = false;         // LSTM: f = 1 - i
  bool linear_before_reset = false;  // GRU
  // num_directions * F entries: direction d's function j is [d * F + j].
  std::vector<RecurrentActivation> activations;

  // Whether direction d (0 or 1) walks the sequence backwards.
  bool reversed(int64_t d) const { return direction == "reverse" || (direction == "bidirectional" && d == 1); }
};

// The op's kind from its name ("LSTM", "GRU", "RNN").
StatusOr<RecurrentKind> recurrent_kind(const std::string& op);

// Parses and checks the node's attributes. Errors (INVALID_ARGUMENT or, for
// an activation Kiln does not know, UNIMPLEMENTED) name the node and the
// attribute.
StatusOr<RecurrentAttrs> parse_recurrent_attrs(const ir::Node& node);

}  // namespace kiln::ops
