// gather.cpp: Gather, GatherElements, GatherND, ScatterElements (and the
// older Scatter), ScatterND. Indices may be negative (counted from the end);
// one out of range fails the node with the index and its position.
#include <algorithm>

#include "kernels/registry.h"
#include "kernels/shape/shape_util.h"

namespace onyx::cpu {
namespace {

// Normalizes index v for an axis of size n into [0, n); false if outside.
bool fix_index(int64_t* v, int64_t n) {
  if (*v < 0) *v += n;
  return *v >= 0 && *v < n;
}

OnyxStatus* index_error(const std::string& label, int64_t value, size_t position, int64_t axis, int64_t n) {
  return util::fail(label, "index %lld (element %zu of input 1) is out of range for axis %lld of size %lld",
                    (long long)value, position, (long long)axis, (long long)n);
}

class GatherKernel final : public sdk::Kernel {
 public:
  explicit GatherKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axis_(node.get_int("axis", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), idx = ctx.in(1);
    int64_t rank = int64_t(x.rank()), axis = 0;
    if (!util::normalize_axis(axis_, rank, &axis))
      return util::fail(label_, "axis %lld is out of range for input 0 of rank %lld", (long long)axis_, (long long)rank);
    std::vector<int64_t> indices;
    if (!util::read_ints(idx, &indices))
      return util::fail(label_, "input 1 has type %s; expected int32 or int64", sdk::dtype_name(idx.dtype));
    int64_t n = x.dim(size_t(axis));
    for (size_t j = 0; j < indices.size(); ++j)
      if (int64_t v = indices[j]; !fix_index(&indices[j], n)) return index_error(label_, v, j, axis, n);
    std::vector<int64_t> out_dims(x.dims.begin(), x.dims.begin() + axis);
    out_dims.insert(out_dims.end(), idx.dims.begin(), idx.dims.end());
    out_dims.insert(out_dims.end(), x.dims.begin() + axis + 1, x.dims.end());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(size_t(d));
    size_t block = size_t(inner) * sdk::dtype_size(x.dtype), m = indices.size();
    if (block == 0 || m == 0) return nullptr;
    const unsigned char* src = static_cast<const unsigned char*>(x.raw);
    unsigned char* dst = static_cast<unsigned char*>(y.raw);
    // Threads take equal ranges of the output's bytes, cutting blocks where
    // they must: one huge block (attention's q/k/v picked from a packed
    // projection) is copied by every thread, not one, and each thread writes
    // the range an elementwise kernel after it would give it.
    ctx.parallel_for(size_t(outer) * m * block, util::kGrain * 4, [&](size_t b, size_t e) {
      for (size_t at = b; at < e;) {
        const size_t i = at / block, within = at % block, bytes = std::min(block - within, e - at);
        const size_t o = i / m, j = i % m;
        std::memcpy(dst + at, src + (o * size_t(n) + size_t(indices[j])) * block + within, bytes);
        at += bytes;
      }
    });
    return nullptr;
  }

 private:
  std::string label_;
  int64_t axis_;
};

// Where GatherElements reads / ScatterElements writes: for every position p
// of the indices, the data offset of p with p[axis] replaced by the index.
OnyxStatus* element_offsets(const std::string& label, const sdk::Tensor& data, const sdk::Tensor& idx,
                            int64_t axis_attr, std::vector<int64_t>* offsets) {
  int64_t rank = int64_t(data.rank()), axis = 0;
  if (!util::normalize_axis(axis_attr, rank, &axis))
    return util::fail(label, "axis %lld is out of range for input 0 of rank %lld", (long long)axis_attr, (long long)rank);
  if (int64_t(idx.rank()) != rank)
    return util::fail(label, "input 1 has rank %zu; expected the rank of input 0 (%lld)", idx.rank(), (long long)rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && idx.dim(size_t(d)) > data.dim(size_t(d)))
      return util::fail(label, "input 1 of shape %s exceeds input 0 of shape %s on axis %lld",
                        util::dims_str(idx.dims).c_str(), util::dims_str(data.dims).c_str(), (long long)d);
  std::vector<int64_t> indices;
  if (!util::read_ints(idx, &indices))
    return util::fail(label, "input 1 has type %s; expected int32 or int64", sdk::dtype_name(idx.dtype));
  std::vector<int64_t> strides = util::strides_of(data.dims), pos(size_t(rank), 0);
  int64_t n = data.dim(size_t(axis));
  offsets->resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t v = indices[i];
    if (!fix_index(&v, n)) return index_error(label, indices[i], i, axis, n);
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d) off += (d == axis ? v : pos[size_t(d)]) * strides[size_t(d)];
    (*offsets)[i] = off;
    for (int64_t d = rank; d-- > 0;) {  // next position of the indices
      if (++pos[size_t(d)] < idx.dim(size_t(d))) break;
      pos[size_t(d)] = 0;
    }
  }
  return nullptr;
}

class GatherElementsKernel final : public sdk::Kernel {
 public:
  explicit GatherElementsKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axis_(node.get_int("axis", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), idx = ctx.in(1);
    std::vector<int64_t> offsets;
    ONYX_SDK_RETURN_IF_ERROR(element_offsets(label_, x, idx, axis_, &offsets));
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, idx.dims, &y));
    shape::visit_size(sdk::dtype_size(x.dtype), [&](auto tag) {
      using E = decltype(tag);
      for (size_t i = 0; i < offsets.size(); ++i) y.data<E>()[i] = x.data<E>()[offsets[i]];
    });
    return nullptr;
  }

 private:
  std::string label_;
  int64_t axis_;
};

// GatherND / ScatterND geometry: the data offset of every index tuple and the
// number of elements each tuple addresses.
struct NdPlan {
  std::vector<int64_t> offsets;
  int64_t slice = 1;
  std::vector<int64_t> out_dims;  // GatherND's output shape
};

OnyxStatus* nd_plan(const std::string& label, const sdk::Tensor& data, const sdk::Tensor& idx,
                    int64_t batch_dims, NdPlan* plan) {
  int64_t r = int64_t(data.rank()), q = int64_t(idx.rank());
  if (q < 1) return util::fail(label, "input 1 (indices) must have rank >= 1");
  int64_t k = idx.dim(size_t(q - 1));
  if (batch_dims < 0 || batch_dims >= std::min(r, q) || k < 1 || k > r - batch_dims)
    return util::fail(label, "indices of shape %s do not fit data of shape %s with batch_dims %lld",
                      util::dims_str(idx.dims).c_str(), util::dims_str(data.dims).c_str(), (long long)batch_dims);
  for (int64_t d = 0; d < batch_dims; ++d)
    if (idx.dim(size_t(d)) != data.dim(size_t(d)))
      return util::fail(label, "batch dim %lld differs: %lld in indices, %lld in data", (long long)d,
                        (long long)idx.dim(size_t(d)), (long long)data.dim(size_t(d)));
  std::vector<int64_t> indices;
  if (!util::read_ints(idx, &indices))
    return util::fail(label, "input 1 has type %s; expected int64", sdk::dtype_name(idx.dtype));
  std::vector<int64_t> strides = util::strides_of(data.dims);
  plan->slice = 1;
  for (int64_t d = batch_dims + k; d < r; ++d) plan->slice *= data.dim(size_t(d));
  int64_t per_batch = 1, batch_stride = batch_dims ? strides[size_t(batch_dims - 1)] : 0;
  for (int64_t d = batch_dims; d < q - 1; ++d) per_batch *= idx.dim(size_t(d));
  size_t tuples = indices.size() / size_t(k);
  plan->offsets.resize(tuples);
  for (size_t t = 0; t < tuples; ++t) {
    int64_t off = per_batch ? int64_t(t) / per_batch * batch_stride : 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t axis = batch_dims + j, v = indices[t * size_t(k) + size_t(j)], n = data.dim(size_t(axis));
      if (!fix_index(&v, n)) return index_error(label, indices[t * size_t(k) + size_t(j)], t * size_t(k) + size_t(j), axis, n);
      off += v * strides[size_t(axis)];
    }
    plan->offsets[t] = off;
  }
  plan->out_dims.assign(idx.dims.begin(), idx.dims.end() - 1);
  plan->out_dims.insert(plan->out_dims.end(), data.dims.begin() + batch_dims + k, data.dims.end());
  return nullptr;
}

class GatherNDKernel final : public sdk::Kernel {
 public:
  explicit GatherNDKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), batch_dims_(node.get_int("batch_dims", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), idx = ctx.in(1);
    NdPlan plan;
    ONYX_SDK_RETURN_IF_ERROR(nd_plan(label_, x, idx, batch_dims_, &plan));
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, plan.out_dims, &y));
    size_t esize = sdk::dtype_size(x.dtype), bytes = size_t(plan.slice) * esize;
    for (size_t t = 0; t < plan.offsets.size(); ++t)
      std::memcpy(static_cast<unsigned char*>(y.raw) + t * bytes,
                  static_cast<const unsigned char*>(x.raw) + size_t(plan.offsets[t]) * esize, bytes);
    return nullptr;
  }

 private:
  std::string label_;
  int64_t batch_dims_;
};

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

bool parse_reduction(const std::string& s, Reduction* r) {
  if (s == "none") *r = Reduction::kNone;
  else if (s == "add") *r = Reduction::kAdd;
  else if (s == "mul") *r = Reduction::kMul;
  else if (s == "max") *r = Reduction::kMax;
  else if (s == "min") *r = Reduction::kMin;
  else return false;
  return true;
}

template <typename T>
T combine(Reduction r, T a, T b) {
  using W = util::wrapping_t<T>;
  switch (r) {
    case Reduction::kAdd: return T(W(a) + W(b));
    case Reduction::kMul: return T(W(a) * W(b));
    case Reduction::kMax: return std::max(a, b);
    case Reduction::kMin: return std::min(a, b);
    case Reduction::kNone: break;
  }
  return b;
}

// Applies updates[i * slice + s] to out[offsets[i] + s], in order (later
// updates of the same element see earlier ones).
OnyxStatus* scatter(const std::string& label, Reduction reduction, const std::vector<int64_t>& offsets,
                    int64_t slice, const sdk::Tensor& updates, const sdk::Tensor& y) {
  size_t esize = sdk::dtype_size(y.dtype);
  if (reduction == Reduction::kNone) {
    for (size_t i = 0; i < offsets.size(); ++i)
      std::memcpy(static_cast<unsigned char*>(y.raw) + size_t(offsets[i]) * esize,
                  static_cast<const unsigned char*>(updates.raw) + i * size_t(slice) * esize, size_t(slice) * esize);
    return nullptr;
  }
  if (util::is_half(y.dtype)) {
    for (size_t i = 0; i < offsets.size(); ++i)
      for (int64_t s = 0; s < slice; ++s) {
        uint16_t& out = y.data<uint16_t>()[offsets[i] + s];
        float u = util::half_value(y.dtype, updates.data<uint16_t>()[int64_t(i) * slice + s]);
        out = util::half_bits(y.dtype, combine(reduction, util::half_value(y.dtype, out), u));
      }
    return nullptr;
  }
  bool known = util::visit<util::kNumeric>(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < offsets.size(); ++i)
      for (int64_t s = 0; s < slice; ++s) {
        T& out = y.data<T>()[offsets[i] + s];
        out = combine(reduction, out, updates.data<T>()[int64_t(i) * slice + s]);
      }
  });
  return known ? nullptr : util::fail(label, "reduction on type %s is not supported", sdk::dtype_name(y.dtype));
}

// ScatterElements / Scatter / ScatterND: out = data, then the updates.
class ScatterKernel final : public sdk::Kernel {
 public:
  ScatterKernel(const sdk::NodeInfo& node, bool nd)
      : label_(util::node_label(node)), nd_(nd), axis_(node.get_int("axis", 0)) {
    parse_reduction(node.get_string("reduction", "none"), &reduction_);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), idx = ctx.in(1), updates = ctx.in(2);
    if (updates.dtype != x.dtype)
      return util::fail(label_, "input 2 has type %s but input 0 has %s", sdk::dtype_name(updates.dtype),
                        sdk::dtype_name(x.dtype));
    std::vector<int64_t> offsets;
    int64_t slice = 1;
    if (nd_) {
      NdPlan plan;
      ONYX_SDK_RETURN_IF_ERROR(nd_plan(label_, x, idx, 0, &plan));
      if (!std::equal(updates.dims.begin(), updates.dims.end(), plan.out_dims.begin(), plan.out_dims.end()))
        return util::fail(label_, "input 2 has shape %s; expected %s", util::dims_str(updates.dims).c_str(),
                          util::dims_str(plan.out_dims).c_str());
      offsets = std::move(plan.offsets);
      slice = plan.slice;
    } else {
      if (!std::equal(updates.dims.begin(), updates.dims.end(), idx.dims.begin(), idx.dims.end()))
        return util::fail(label_, "input 2 has shape %s; expected the shape of input 1, %s",
                          util::dims_str(updates.dims).c_str(), util::dims_str(idx.dims).c_str());
      ONYX_SDK_RETURN_IF_ERROR(element_offsets(label_, x, idx, axis_, &offsets));
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    util::parallel_copy(ctx, y.raw, x.raw, shape::byte_size(x));
    return scatter(label_, reduction_, offsets, slice, updates, y);
  }

  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    util::output0_may_overwrite_input(out);
  }

 private:
  std::string label_;
  bool nd_;
  int64_t axis_;
  Reduction reduction_ = Reduction::kNone;
};

// The checks Gather* and Scatter* share: data of a fixed element size,
// indices (input 1) of `index_types`, updates (input 2) of data's type.
sdk::KernelDefBuilder gather_def(const char* op, int64_t since, size_t inputs, sdk::DTypeSet index_types) {
  sdk::KernelDefBuilder def(op);
  def.since(since).inputs(inputs).input_type(1, index_types);
  if (inputs == 3) def.type_constraint("T", {0, 2}, {});
  def.check(shape::sized_input(0));
  return def;
}

// Scatter's reduction attribute: one ONNX names, and "none" for
// non-numeric data.
std::string check_reduction(const sdk::NodeInfo& node) {
  Reduction r;
  std::string reduction = node.get_string("reduction", "none");
  if (!parse_reduction(reduction, &r))
    return node.op_type + ": attribute reduction is '" + reduction + "'; expected none, add, mul, max or min";
  if (reduction != "none" && !util::in_set(node.input_dtype(0), util::kNumeric | util::kHalf))
    return node.op_type + ": reduction '" + reduction + "' on type " + sdk::dtype_name(node.input_dtype(0)) +
           " is not supported";
  return {};
}

}  // namespace

void register_gather_kernels(sdk::KernelRegistry& registry) {
  using shape::kIndexTypes;
  using shape::kInt64;
  registry.add(gather_def("Gather", 1, 2, kIndexTypes).create<GatherKernel>());
  registry.add(gather_def("GatherElements", 11, 2, kIndexTypes).create<GatherElementsKernel>());
  registry.add(gather_def("GatherND", 11, 2, kInt64).create<GatherNDKernel>());
  registry.add(gather_def("ScatterElements", 11, 3, kIndexTypes).check(check_reduction).create([](const sdk::NodeInfo& n) {
    return std::make_unique<ScatterKernel>(n, false);
  }));
  registry.add(gather_def("Scatter", 9, 3, kIndexTypes).create([](const sdk::NodeInfo& n) {
    return std::make_unique<ScatterKernel>(n, false);
  }));
  registry.add(gather_def("ScatterND", 11, 3, kInt64).check(check_reduction).create([](const sdk::NodeInfo& n) {
    return std::make_unique<ScatterKernel>(n, true);
  }));
}

}  // namespace onyx::cpu
