// rules_linalg.cpp: gradients of MatMul (numpy semantics, batch
// broadcasting) and Gemm.
#include "autodiff/rules.h"

namespace onyx::runtime::autodiff {
namespace {

// x with its last two dims swapped.
std::string swap_last_two(Emitter& e, const std::string& x, int rank) {
  std::vector<int64_t> perm;
  for (int k = 0; k < rank; ++k) perm.push_back(k);
  std::swap(perm[size_t(rank - 1)], perm[size_t(rank - 2)]);
  return e.op("Transpose", {x}, {attr_ints("perm", perm)});
}

// The first `count` dims of a and b are provably equal (ValueType::same_shape).
bool same_batch_dims(Emitter& e, const std::string& a, const std::string& b, int count) {
  auto ta = e.type(a), tb = e.type(b);
  if (!ta || !tb || ta->rank < count || tb->rank < count) return false;
  for (ValueType* t : {&*ta, &*tb}) {
    t->rank = count;
    t->dims.resize(size_t(count));
    if (t->symbols.size() > size_t(count)) t->symbols.resize(size_t(count));
  }
  return ta->same_shape(*tb);
}

// Y = A B. dA = G B^T, dB = A^T G, each summed over broadcast batch dims.
// A 1-D operand is lifted to a matrix (as MatMul does) and the result reshaped back.
Status matmul_rule(GradContext& c) {
  Emitter& e = c.e();
  ONYX_ASSIGN_OR_RETURN(int ra, c.rank_of(c.x(0)));
  ONYX_ASSIGN_OR_RETURN(int rb, c.rank_of(c.x(1)));
  if (ra == 2 && rb == 2) {  // the common case: two Gemms
    if (c.needs(0)) c.set_dx(0, e.op("Gemm", {c.dy(0), c.x(1)}, {attr_int("transB", 1)}));
    if (c.needs(1)) c.set_dx(1, e.op("Gemm", {c.x(0), c.dy(0)}, {attr_int("transA", 1)}));
    return Status();
  }
  if (rb == 2 && ra >= 3) {
    // A [..., M, K] times a matrix B [K, N] (a linear layer over a batch of
    // sequences) is one product over all rows: so are its gradients, as
    // Gemms over A and G flattened to rows. The batched form below would
    // compute dB as one K x N product per batch entry and then sum them (a
    // transformer block's 256 x 1024 weight at batch 64: 64 MB written and
    // read again, 2x the step's other matrix products together).
    const std::string a_rows = e.op("Flatten", {c.x(0)}, {attr_int("axis", ra - 1)});
    const std::string g_rows = e.op("Flatten", {c.dy(0)}, {attr_int("axis", ra - 1)});
    if (c.needs(0))
      c.set_dx(0, e.op("Reshape", {e.op("Gemm", {g_rows, c.x(1)}, {attr_int("transB", 1)}), e.op("Shape", {c.x(0)})}));
    if (c.needs(1)) c.set_dx(1, e.op("Gemm", {a_rows, g_rows}, {attr_int("transA", 1)}));
    return Status();
  }
  std::string a = c.x(0), b = c.x(1), g = c.dy(0);
  if (ra == 1) {
    a = e.unsqueeze(a, {0});
    g = e.unsqueeze(g, {-2});
    ra = 2;
  }
  if (rb == 1) {
    b = e.unsqueeze(b, {1});
    g = e.unsqueeze(g, {-1});
    rb = 2;
  }
  // Batch dims provably the same on both sides (attention's [batch, heads,
  // ...] products): nothing was broadcast, so each product already has its
  // operand's shape.
  const bool unbroadcast = a == c.x(0) && b == c.x(1) && ra == rb && same_batch_dims(e, a, b, ra - 2);
  auto reduce_to = [&](const std::string& full, const std::string& lifted, const std::string& original) {
    if (unbroadcast) return full;
    std::string summed = e.op("SumToShape", {full, e.op("Shape", {lifted})}, {}, kOnyxDomain);
    e.set_type(summed, {e.dtype(original), -1, {}});
    return lifted == original ? summed : e.op("Reshape", {summed, e.op("Shape", {original})});
  };
  if (c.needs(0)) c.set_dx(0, reduce_to(e.op("MatMul", {g, swap_last_two(e, b, rb)}), a, c.x(0)));
  if (c.needs(1)) c.set_dx(1, reduce_to(e.op("MatMul", {swap_last_two(e, a, ra), g}), b, c.x(1)));
  return Status();
}

// Y = alpha op(A) op(B) + beta C, op(X) = X or X^T.
Status gemm_rule(GradContext& c) {
  Emitter& e = c.e();
  const bool ta = c.attr_int("transA", 0) != 0, tb = c.attr_int("transB", 0) != 0;
  const float alpha = c.attr_float("alpha", 1), beta = c.attr_float("beta", 1);
  auto gemm = [&](const std::string& p, const std::string& q, bool tp, bool tq) {
    return e.op("Gemm", {p, q},
                {attr_int("transA", tp), attr_int("transB", tq), attr_float("alpha", alpha)});
  };
  const std::string g = c.dy(0), a = c.x(0), b = c.x(1);
  if (c.needs(0)) c.set_dx(0, ta ? gemm(b, g, tb, true) : gemm(g, b, false, !tb));
  if (c.needs(1)) c.set_dx(1, tb ? gemm(g, a, true, ta) : gemm(a, g, !ta, false));
  if (c.needs(2)) {
    std::string scaled = beta == 1 ? g : e.op("Mul", {g, e.scalar_like(beta, c.y(0))});
    c.set_dx(2, e.sum_to_shape(scaled, c.x(2), c.y(0)));
  }
  return Status();
}

}  // namespace

void add_linalg_rules(RuleTable& t) {
  t["MatMul"] = matmul_rule;
  t["Gemm"] = gemm_rule;
}

}  // namespace onyx::runtime::autodiff
