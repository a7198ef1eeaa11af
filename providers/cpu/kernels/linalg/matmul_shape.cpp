// matmul_shape.cpp: the shape rules of matmul_shape.h.
#include "kernels/linalg/matmul_shape.h"

#include <algorithm>

#include "kernels/kernel_util.h"

namespace onyx::cpu::linalg {

std::string matmul_shape(std::span<const int64_t> a, std::span<const int64_t> b, MatMulShape* s) {
  if (a.empty() || b.empty()) return "MatMul inputs must have rank >= 1";
  // A 1-D A is [1, K] and a 1-D B is [K, 1]; ar and br batch dims come first.
  // Read in place: this runs for every MatMul of every run, and each copy
  // of the dims was an allocation.
  const size_t ar = a.size() > 1 ? a.size() - 2 : 0, br = b.size() > 1 ? b.size() - 2 : 0;
  s->m = a.size() > 1 ? a[ar] : 1;
  s->k = a.back();
  s->n = b.size() > 1 ? b.back() : 1;
  if ((b.size() > 1 ? b[br] : b[0]) != s->k)
    return "inner dims differ: A " + util::dims_str(a) + " x B " + util::dims_str(b);
  // Broadcast the batch dims, aligned at the right, into Y's dims.
  const size_t rank = std::max(ar, br);
  auto a_dim = [&](size_t i) { return i + ar >= rank ? a[i + ar - rank] : int64_t(1); };
  auto b_dim = [&](size_t i) { return i + br >= rank ? b[i + br - rank] : int64_t(1); };
  s->y_dims.clear();
  s->y_dims.reserve(rank + 2);
  int64_t as = 1, bs = 1, count = 1;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = a_dim(i), db = b_dim(i);
    if (da != db && da != 1 && db != 1)
      return "batch dims do not broadcast: A " + util::dims_str(a) + " x B " + util::dims_str(b);
    s->y_dims.push_back(da == 0 || db == 0 ? 0 : std::max(da, db));
    as *= da;
    bs *= db;
    count *= s->y_dims.back();
  }
  // Y matrix t's A and B matrices: its batch position, dim by dim from the
  // last, through each input's strides (0 where that input broadcasts).
  s->a_index.assign(size_t(count), 0);
  s->b_index.assign(size_t(count), 0);
  for (int64_t t = 0; t < count; ++t) {
    int64_t rem = t, a_stride = 1, b_stride = 1;
    for (size_t i = rank; i-- > 0;) {
      const int64_t pos = rem % s->y_dims[i], da = a_dim(i), db = b_dim(i);
      rem /= s->y_dims[i];
      if (da != 1) s->a_index[size_t(t)] += pos * a_stride;
      if (db != 1) s->b_index[size_t(t)] += pos * b_stride;
      a_stride *= da;
      b_stride *= db;
    }
  }
  s->fold_a = bs == 1 && as == count;
  if (a.size() > 1) s->y_dims.push_back(s->m);
  if (b.size() > 1) s->y_dims.push_back(s->n);
  return {};
}

}  // namespace onyx::cpu::linalg
