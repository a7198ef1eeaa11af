// op_util.h: host-side setup of the index structs the kernels use (broadcast
// strides, reduction axes, softmax rows). Plain C++, so the host tests build
// the same structs the providers do.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "kernel_math.h"

namespace onyx::gpu {

// Numpy broadcasting of a and b. Returns "" or why the shapes do not broadcast.
inline std::string make_broadcast(std::span<const int64_t> a, std::span<const int64_t> b,
                                  BroadcastIndex* index, std::vector<int64_t>* out_dims) {
  size_t rank = std::max(a.size(), b.size());
  if (rank > size_t(kMaxRank)) return "rank " + std::to_string(rank) + " exceeds " + std::to_string(kMaxRank);
  *index = BroadcastIndex{};
  index->rank = int32_t(rank);
  out_dims->assign(rank, 1);
  int64_t sa = 1, sb = 1;
  for (size_t k = rank; k-- > 0;) {
    size_t ka = k + a.size() - rank, kb = k + b.size() - rank;  // wrap for missing dims
    int64_t da = k + a.size() >= rank ? a[ka] : 1;
    int64_t db = k + b.size() >= rank ? b[kb] : 1;
    if (da != db && da != 1 && db != 1)
      return "shapes do not broadcast: dimension " + std::to_string(da) + " vs " + std::to_string(db);
    int64_t d = da == 1 ? db : da;
    (*out_dims)[k] = d;
    index->out_dims[k] = d;
    index->a_strides[k] = da == 1 ? 0 : sa;
    index->b_strides[k] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  return {};
}

// Transpose as a strided copy: output dim k walks input dim perm[k]. The
// output dims go to `out_dims`. Returns "" or why `perm` is invalid.
inline std::string make_transpose(std::span<const int64_t> dims, std::vector<int64_t> perm,
                                  BroadcastIndex* index, std::vector<int64_t>* out_dims) {
  size_t rank = dims.size();
  if (rank > size_t(kMaxRank)) return "rank " + std::to_string(rank) + " exceeds " + std::to_string(kMaxRank);
  if (perm.empty())
    for (size_t k = rank; k-- > 0;) perm.push_back(int64_t(k));  // default: reverse
  if (perm.size() != rank) return "perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank);
  std::vector<int64_t> strides(rank, 1);
  for (size_t k = rank; k-- > 1;) strides[k - 1] = strides[k] * dims[k];
  std::vector<bool> seen(rank, false);
  *index = BroadcastIndex{};
  index->rank = int32_t(rank);
  out_dims->resize(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t p = perm[k] < 0 ? perm[k] + int64_t(rank) : perm[k];
    if (p < 0 || p >= int64_t(rank) || seen[size_t(p)]) return "perm is not a permutation";
    seen[size_t(p)] = true;
    (*out_dims)[k] = index->out_dims[k] = dims[size_t(p)];
    index->a_strides[k] = strides[size_t(p)];
  }
  return {};
}

// Slice (opset 10+) as a strided copy: `starts`/`ends`/`steps` per entry of
// `axes` (all axes in order when empty), clamped as the ONNX spec says.
// Sets the strides, the first element's offset and the output dims.
inline std::string make_slice(std::span<const int64_t> dims, const std::vector<int64_t>& starts,
                              const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                              std::vector<int64_t> steps, BroadcastIndex* index, int64_t* offset,
                              std::vector<int64_t>* out_dims) {
  size_t rank = dims.size();
  if (rank > size_t(kMaxRank)) return "rank " + std::to_string(rank) + " exceeds " + std::to_string(kMaxRank);
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return "starts, ends, axes and steps differ in length";
  std::vector<int64_t> strides(rank, 1), begin(rank, 0), step(rank, 1), count(dims.begin(), dims.end());
  for (size_t k = rank; k-- > 1;) strides[k - 1] = strides[k] * dims[k];
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + int64_t(rank) : axes[i];
    if (a < 0 || a >= int64_t(rank) || seen[size_t(a)]) return "axes are out of range or repeated";
    seen[size_t(a)] = true;
    int64_t d = dims[size_t(a)], s = starts[i], e = ends[i], st = steps[i];
    if (st == 0) return "a step is 0";
    if (s < 0) s += d;
    if (e < 0) e += d;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
    }
    int64_t n = st > 0 ? (e - s + st - 1) / st : (s - e - st - 1) / -st;
    begin[size_t(a)] = s, step[size_t(a)] = st, count[size_t(a)] = std::max<int64_t>(n, 0);
  }
  *index = BroadcastIndex{};
  index->rank = int32_t(rank);
  *offset = 0;
  out_dims->assign(count.begin(), count.end());
  for (size_t k = 0; k < rank; ++k) {
    index->out_dims[k] = count[k];
    index->a_strides[k] = strides[k] * step[k];
    *offset += begin[k] * strides[k];
  }
  return {};
}

// Reduction over `axes` (already normalized to [0, rank), any order, no
// duplicates) of a tensor of shape `dims`. Output dims follow keepdims.
inline ReduceIndex make_reduce_index(std::span<const int64_t> dims, const std::vector<bool>& reduced,
                                     bool keepdims, std::vector<int64_t>* out_dims) {
  ReduceIndex ri;
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) strides[k - 1] = strides[k] * dims[k];
  out_dims->clear();
  for (size_t k = 0; k < dims.size(); ++k) {
    if (reduced[k]) {
      ri.reduced_dims[ri.reduced_rank] = dims[k];
      ri.reduced_strides[ri.reduced_rank++] = strides[k];
      ri.reduce_count *= dims[k];
      if (keepdims) out_dims->push_back(1);
    } else {
      ri.kept_dims[ri.kept_rank] = dims[k];
      ri.kept_strides[ri.kept_rank++] = strides[k];
      out_dims->push_back(dims[k]);
    }
  }
  return ri;
}

// Softmax rows: opset >= 13 normalizes one axis; older opsets flatten the
// input to 2-D at `axis` and normalize the trailing block.
inline RowLayout make_softmax_rows(std::span<const int64_t> dims, int64_t axis, bool single_axis) {
  RowLayout l;
  int64_t outer = 1, length = 1, inner = 1;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (int64_t(k) < axis) outer *= dims[k];
    else if (int64_t(k) == axis || !single_axis) length *= dims[k];
    else inner *= dims[k];
  }
  l.rows = outer * inner;
  l.length = length;
  l.inner = inner;
  return l;
}

// Squeeze: removes the listed size-1 axes (all size-1 axes when none listed).
inline std::string squeeze_dims(std::span<const int64_t> in, const std::vector<int64_t>& axes,
                                std::vector<int64_t>* out) {
  std::vector<bool> drop(in.size(), false);
  for (int64_t a : axes) {
    int64_t k = a < 0 ? a + int64_t(in.size()) : a;
    if (k < 0 || k >= int64_t(in.size())) return "axis " + std::to_string(a) + " out of range";
    if (in[size_t(k)] != 1) return "cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(in[size_t(k)]);
    drop[size_t(k)] = true;
  }
  out->clear();
  for (size_t k = 0; k < in.size(); ++k)
    if (!(axes.empty() ? in[k] == 1 : drop[k])) out->push_back(in[k]);
  return {};
}

// Unsqueeze: inserts size-1 axes at the listed positions of the output.
inline std::string unsqueeze_dims(std::span<const int64_t> in, const std::vector<int64_t>& axes,
                                  std::vector<int64_t>* out) {
  int64_t rank = int64_t(in.size() + axes.size());
  std::vector<bool> inserted(size_t(rank), false);
  for (int64_t a : axes) {
    int64_t k = a < 0 ? a + rank : a;
    if (k < 0 || k >= rank) return "axis " + std::to_string(a) + " out of range";
    if (inserted[size_t(k)]) return "axis " + std::to_string(a) + " repeated";
    inserted[size_t(k)] = true;
  }
  out->clear();
  size_t next = 0;
  for (int64_t k = 0; k < rank; ++k) out->push_back(inserted[size_t(k)] ? 1 : in[next++]);
  return {};
}

// Reshape's output dims: 0 copies the input's dimension (unless allow_zero),
// one -1 is inferred. Returns "" or why the shape does not fit.
inline std::string reshape_dims(std::span<const int64_t> in, const std::vector<int64_t>& shape,
                                bool allow_zero, std::vector<int64_t>* out) {
  int64_t total = 1, known = 1, infer = -1;
  for (int64_t d : in) total *= d;
  out->assign(shape.begin(), shape.end());
  for (size_t k = 0; k < out->size(); ++k) {
    int64_t& d = (*out)[k];
    if (d == 0 && !allow_zero) {
      if (k >= in.size()) return "shape copies dimension " + std::to_string(k) + " the input lacks";
      d = in[k];
    }
    if (d == -1) {
      if (infer >= 0) return "shape has more than one -1";
      infer = int64_t(k);
    } else if (d < 0) {
      return "shape has a negative dimension";
    } else {
      known *= d;
    }
  }
  if (infer >= 0) {
    if (known == 0 || total % known) return "cannot infer the -1 dimension";
    (*out)[size_t(infer)] = total / known;
  } else if (known != total) {
    return "shape has " + std::to_string(known) + " elements, the input " + std::to_string(total);
  }
  return {};
}

}  // namespace onyx::gpu
