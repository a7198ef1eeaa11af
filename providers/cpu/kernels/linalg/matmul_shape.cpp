// matmul_shape.cpp: the shape rules of matmul_shape.h.
#include "kernels/linalg/matmul_shape.h"

#include <algorithm>

#include "kernels/kernel_util.h"

namespace onyx::cpu::linalg {

std::string matmul_shape(std::span<const int64_t> a, std::span<const int64_t> b, MatMulShape* s) {
  if (a.empty() || b.empty()) return "MatMul inputs must have rank >= 1";
  std::vector<int64_t> ad(a.begin(), a.end()), bd(b.begin(), b.end());
  if (a.size() == 1) ad.insert(ad.begin(), 1);
  if (b.size() == 1) bd.push_back(1);
  s->m = ad[ad.size() - 2];
  s->k = ad.back();
  s->n = bd.back();
  if (bd[bd.size() - 2] != s->k)
    return "inner dims differ: A " + util::dims_str(a) + " x B " + util::dims_str(b);
  // Broadcast the batch dims, aligned at the right.
  size_t ar = ad.size() - 2, br = bd.size() - 2, rank = std::max(ar, br);
  std::vector<int64_t> batch(rank), a_stride(rank, 0), b_stride(rank, 0);
  int64_t as = 1, bs = 1;
  for (size_t i = rank; i-- > 0;) {
    int64_t da = i + ar >= rank ? ad[i + ar - rank] : 1,
            db = i + br >= rank ? bd[i + br - rank] : 1;
    if (da != db && da != 1 && db != 1)
      return "batch dims do not broadcast: A " + util::dims_str(a) + " x B " + util::dims_str(b);
    batch[i] = std::max(da, db);
    if (da == 0 || db == 0) batch[i] = 0;
    a_stride[i] = da == 1 ? 0 : as;
    b_stride[i] = db == 1 ? 0 : bs;
    as *= da;
    bs *= db;
  }
  int64_t count = sdk::element_count(batch);
  s->a_index.assign(size_t(count), 0);
  s->b_index.assign(size_t(count), 0);
  for (int64_t t = 0; t < count; ++t) {
    int64_t rem = t;
    for (size_t i = rank; i-- > 0;) {
      int64_t pos = rem % batch[i];
      rem /= batch[i];
      s->a_index[size_t(t)] += pos * a_stride[i];
      s->b_index[size_t(t)] += pos * b_stride[i];
    }
  }
  s->fold_a = bs == 1 && as == count;
  s->y_dims = batch;
  if (a.size() > 1) s->y_dims.push_back(s->m);
  if (b.size() > 1) s->y_dims.push_back(s->n);
  return {};
}

}  // namespace onyx::cpu::linalg
