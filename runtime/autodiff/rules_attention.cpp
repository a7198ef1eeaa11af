// rules_attention.cpp: the gradient of ONNX Attention (opset 23), by
// recomputing the attention weights in the backward graph (the forward node
// stays the provider's fused kernel and keeps nothing but its output):
//   S = scale Q K^T (+ mask, causal),  P = softmax(S),  Y = P V
//   dV = P^T dY,  dP = dY V^T,  dS = P (dP - rowsum(dP P)),
//   dQ = scale dS K,  dK = scale dS^T Q,  d(additive mask) = dS summed to its shape.
// Q, K, V are [B, H, S, D], or [B, S, H * D] with q_num_heads / kv_num_heads.
// Refused with an error naming the node: grouped KV heads (kv heads other
// than q heads), a KV cache (past_key/past_value), softcap, and gradients of
// the outputs other than Y.
#include <cmath>
#include <limits>

#include "autodiff/rules.h"

namespace onyx::runtime::autodiff {
namespace {

constexpr int kQ = 0, kK = 1, kV = 2, kMask = 3, kPastKey = 4, kPastValue = 5;

Status attention_rule(GradContext& c) {
  Emitter& e = c.e();
  auto refuse = [&](const std::string& why) { return unimplemented(c.label() + ": no gradient " + why); };
  if (!c.x(kPastKey).empty() || !c.x(kPastValue).empty()) return refuse("with a KV cache (past_key, past_value)");
  if (c.attr_float("softcap", 0) != 0) return refuse("with softcap");
  for (int k = 1; k < c.output_count(); ++k)
    if (!c.dy(k).empty()) return refuse("for output " + std::to_string(k) + " (only Y, output 0, has one)");
  ONYX_ASSIGN_OR_RETURN(int rank, c.rank_of(c.x(kQ)));
  const int64_t q_heads = c.attr_int("q_num_heads", 0), kv_heads = c.attr_int("kv_num_heads", 0);
  if (rank == 3 && (q_heads <= 0 || kv_heads != q_heads))
    return refuse("for 3-D inputs unless q_num_heads = kv_num_heads > 0 (grouped KV heads are not supported)");
  if (rank != 3 && rank != 4) return refuse("for inputs of rank " + std::to_string(rank));

  // 3-D [B, S, H * D] -> 4-D [B, H, S, D], and back.
  auto to_heads = [&](const std::string& x) {
    if (rank == 4) return x;
    return e.op("Transpose", {e.op("Reshape", {x, e.ints({0, 0, q_heads, -1})})}, {attr_ints("perm", {0, 2, 1, 3})});
  };
  auto from_heads = [&](const std::string& x) {
    if (rank == 4) return x;
    return e.op("Reshape", {e.op("Transpose", {x}, {attr_ints("perm", {0, 2, 1, 3})}), e.ints({0, 0, -1})});
  };
  auto transpose_last = [&](const std::string& x) { return e.op("Transpose", {x}, {attr_ints("perm", {0, 1, 3, 2})}); };

  const std::string q = to_heads(c.x(kQ)), k = to_heads(c.x(kK)), v = to_heads(c.x(kV)), dy = to_heads(c.dy(0));
  // The scale: the attribute, else 1 / sqrt(head size).
  std::string scale;
  if (c.has_attr("scale")) {
    scale = e.scalar_like(c.attr_float("scale", 1), c.x(kQ));
  } else {
    std::string head_size = e.op("Cast", {e.op("Shape", {q}, {attr_int("start", 3)})}, {attr_int("to", e.dtype(c.x(kQ)))});
    scale = e.op("Reciprocal", {e.op("Sqrt", {head_size})});
  }
  std::string scores = e.op("Mul", {e.op("MatMul", {q, transpose_last(k)}), scale});
  // Masks: a float mask adds; a bool mask and is_causal keep (true) or drop.
  std::string keep;
  const std::string mask = c.x(kMask);
  if (!mask.empty()) {
    if (e.dtype(mask) == ONNX_NAMESPACE::TensorProto::BOOL) keep = mask;
    else scores = e.op("Add", {scores, mask});
  }
  if (c.attr_int("is_causal", 0) != 0) {
    // Lower triangle of [Sq, Sk]: key j is visible from query i when j <= i.
    std::string sizes = e.op("Shape", {scores}, {attr_int("start", 2)});
    std::string ones = e.op("ConstantOfShape", {sizes}, {});  // float 0s
    std::string lower = e.op("Trilu", {e.op("Add", {ones, e.scalar(1, ONNX_NAMESPACE::TensorProto::FLOAT)})},
                             {attr_int("upper", 0)});
    std::string causal = e.op("Cast", {lower}, {attr_int("to", ONNX_NAMESPACE::TensorProto::BOOL)});
    keep = keep.empty() ? causal : e.op("And", {keep, causal});
  }
  std::string weights;
  if (keep.empty()) {
    weights = e.op("Softmax", {scores}, {attr_int("axis", -1)});
  } else {
    // As the kernel does: dropped keys weigh 0, and a row with every key
    // dropped weighs 0 everywhere (not the NaN of softmax over -inf).
    std::string minus_inf = e.scalar_like(-std::numeric_limits<double>::infinity(), c.x(kQ));
    std::string p = e.op("Softmax", {e.op("Where", {keep, scores, minus_inf})}, {attr_int("axis", -1)});
    weights = e.op("Where", {e.op("IsNaN", {p}), e.scalar_like(0, c.x(kQ)), p});
  }

  std::string dp = e.op("MatMul", {dy, transpose_last(v)});
  std::string ds = e.op("Mul", {weights, e.op("Sub", {dp, e.reduce("ReduceSum", e.op("Mul", {dp, weights}), {-1}, true)})});
  if (c.needs(kQ)) c.set_dx(kQ, from_heads(e.op("Mul", {e.op("MatMul", {ds, k}), scale})));
  if (c.needs(kK)) c.set_dx(kK, from_heads(e.op("Mul", {e.op("MatMul", {transpose_last(ds), q}), scale})));
  if (c.needs(kV)) c.set_dx(kV, from_heads(e.op("MatMul", {transpose_last(weights), dy})));
  if (c.needs(kMask) && !mask.empty() && e.dtype(mask) != ONNX_NAMESPACE::TensorProto::BOOL)
    c.set_dx(kMask, e.sum_to_shape(ds, mask, scores));
  return Status();
}

}  // namespace

void add_attention_rules(RuleTable& t) { t["Attention"] = attention_rule; }

}  // namespace onyx::runtime::autodiff
