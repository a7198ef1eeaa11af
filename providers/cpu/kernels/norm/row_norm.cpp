// row_norm.cpp: LayerNormalization, InstanceNormalization and
// GroupNormalization (float32, float64): rows of contiguous elements, each
// normalized with its own statistics, then scaled per channel or element.
//
// Statistics are accumulated in double with two passes (mean, then the mean
// of squared deviations), which keeps the variance accurate when the mean is
// large compared with the spread.
#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>

#include "kernels/elementwise/vec_math.h"
#include "kernels/norm/norm_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

struct Moments {
  double mean = 0, var = 0;  // population variance
};

// Each pass keeps 32 independent partial sums: one chain of dependent
// double adds would take the adder's latency per element, and the compiler
// may not reorder a single sum by itself. 32 lanes it vectorizes as they are,
// four or eight vector chains in flight (with eight lanes, two chains: a
// 256-wide LayerNorm row took 2.5 cycles an element, bound by add latency).
constexpr int64_t kParts = 32;

// The partial sums added pairwise: five vectorized levels, not a chain of
// 31 dependent adds (which cost as much as the 256 elements of a row).
[[gnu::always_inline]] inline double total(double (&part)[kParts]) {
  for (int64_t w = kParts / 2; w >= 1; w /= 2)
    for (int64_t j = 0; j < w; ++j) part[j] += part[j + w];
  return part[0];
}

template <typename T>
[[gnu::always_inline]] inline Moments moments(const T* x, int64_t n) {
  Moments m;
  if (n == 0) return m;
  double part[kParts] = {};
  int64_t k = 0;
  for (; k + kParts <= n; k += kParts)
    for (int64_t j = 0; j < kParts; ++j) part[j] += double(x[k + j]);
  double sum = 0;
  for (; k < n; ++k) sum += double(x[k]);
  sum += total(part);
  m.mean = sum / double(n);
  double sq_part[kParts] = {};
  for (k = 0; k + kParts <= n; k += kParts)
    for (int64_t j = 0; j < kParts; ++j) {
      const double d = double(x[k + j]) - m.mean;
      sq_part[j] += d * d;
    }
  double sq = 0;
  for (; k < n; ++k) {
    const double d = double(x[k]) - m.mean;
    sq += d * d;
  }
  sq += total(sq_part);
  m.var = sq / double(n);
  return m;
}

// One float32 LayerNormalization row (statistics and affine in double),
// where the CPU has no vec::layer_norm_row loop, that is no AVX2: so not
// cloned for AVX2 or AVX-512, whose clones would never run.
Moments layer_row(const float* x, float* y, int64_t n, const double* scale, const double* bias, double epsilon) {
  Moments m = moments(x, n);
  const double inv_std = 1.0 / std::sqrt(m.var + epsilon);
  for (int64_t k = 0; k < n; ++k) y[k] = float((double(x[k]) - m.mean) * inv_std * scale[k] + bias[k]);
  m.var = inv_std;
  return m;
}

// LayerNormalization's scale (input 1) and optional bias (input 2), each
// broadcast to the normalized shape `norm` = dims[axis:] of X (numpy rules,
// aligned at the right) and expanded to its `n` elements, the order of a row.
OnyxStatus* layer_norm_affine(const std::string& label, sdk::ComputeContext& ctx, std::span<const int64_t> norm,
                              int64_t n, std::vector<double>* scale, std::vector<double>* bias) {
  for (size_t k = 1; k < 3; ++k) {
    std::vector<double>* out = k == 1 ? scale : bias;
    std::optional<sdk::Tensor> t = ctx.input(k);
    if (!t) {
      out->assign(size_t(n), k == 1 ? 1.0 : 0.0);
      continue;
    }
    if (t->rank() > norm.size())
      return nn::fail(label, "input %zu shape %s does not broadcast to the normalized shape %s",
                      k, nn::dims_str(t->dims).c_str(), nn::dims_str(norm).c_str());
    size_t lead = norm.size() - t->rank();
    for (size_t d = 0; d < t->rank(); ++d)
      if (t->dim(d) != 1 && t->dim(d) != norm[lead + d])
        return nn::fail(label,
                        "input %zu shape %s does not broadcast to the normalized shape %s", k,
                        nn::dims_str(t->dims).c_str(), nn::dims_str(norm).c_str());
    out->resize(size_t(n));
    for (int64_t e = 0; e < n; ++e) {  // map element e of dims[axis:] to t's index
      int64_t rem = e, src = 0, stride = 1;
      for (size_t d = norm.size(); d-- > 0;) {
        int64_t i = rem % norm[d];
        rem /= norm[d];
        if (d >= lead) {
          int64_t td = t->dim(d - lead);
          src += (td == 1 ? 0 : i) * stride;
          stride *= td;
        }
      }
      (*out)[size_t(e)] = nn::element_as_double(*t, src);
    }
  }
  return nullptr;
}

enum class RowNormKind { kLayer, kInstance, kGroup };

class RowNormKernel final : public sdk::Kernel {
 public:
  RowNormKernel(const sdk::NodeInfo& node, RowNormKind kind)
      : label_(nn::node_label(node)),
        kind_(kind),
        epsilon_(node.get_float("epsilon", 1e-5)),
        axis_(node.get_int("axis", -1)),
        groups_(node.get_int("num_groups", 1)),
        per_group_affine_(kind == RowNormKind::kGroup && node.opset < 21),
        // LayerNormalization's expanded scale and bias depend only on the
        // normalized shape when both are constants: kept between runs.
        constant_affine_(kind == RowNormKind::kLayer && node.inputs[1].constant &&
                         (!node.input_present(2) || node.inputs[2].constant)) {
    for (size_t k = 1; k < 3 && k < node.outputs.size(); ++k) {
      want_stats_[k - 1] = node.outputs[k].present;
      stats_dtype_[k - 1] =
          node.outputs[k].dtype ? node.outputs[k].dtype : int32_t(node.get_int("stash_type", 1));
    }
  }

  // A row's statistics come before its writes; rows are disjoint.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    util::output0_may_overwrite_input(out);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t rows = 0, n = 0, channels_per_row = 1;
    ONYX_SDK_RETURN_IF_ERROR(layout(x, &rows, &n, &channels_per_row));
    // Expanded per-element (layer) or per-channel (instance, group) affine.
    std::shared_ptr<const Affine> affine;
    ONYX_SDK_RETURN_IF_ERROR(affine_for(ctx, x, n, &affine));
    const std::vector<double>& scale = affine->scale;
    const std::vector<double>& bias = affine->bias;

    sdk::Tensor y, stats[2];
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    if (kind_ == RowNormKind::kLayer) {
      int64_t axis = 0;
      nn::normalize_axis(axis_, int64_t(x.rank()), &axis);
      std::vector<int64_t> stat_dims = x.shape();
      std::fill(stat_dims.begin() + axis, stat_dims.end(), 1);
      for (size_t k = 0; k < 2; ++k)
        if (want_stats_[k])
          ONYX_SDK_RETURN_IF_ERROR(ctx.output(k + 1, stats_dtype_[k], stat_dims, &stats[k]));
    }
    if (x.size() == 0) return nullptr;
    const int64_t seg = n / channels_per_row;  // elements sharing one affine pair
    // An element costs about 16 grain units: two passes in double, then the affine.
    ctx.parallel_for(size_t(rows), nn::grain_for(double(n) * 16), [&](size_t lo, size_t hi) {
      for (size_t r = lo; r < hi; ++r) {
        if (x.dtype == ONYX_DTYPE_FLOAT64)
          row<double>(x, y, stats, int64_t(r), n, seg, scale, bias);
        else
          row<float>(x, y, stats, int64_t(r), n, seg, scale, bias);
      }
    });
    return nullptr;
  }

 private:
  // rows x n elements; each row covers `channels_per_row` affine channels.
  OnyxStatus* layout(const sdk::Tensor& x, int64_t* rows, int64_t* n, int64_t* cpr) const {
    int64_t rank = int64_t(x.rank());
    if (kind_ == RowNormKind::kLayer) {
      int64_t axis = 0;
      if (!nn::normalize_axis(axis_, rank, &axis))
        return nn::fail(label_, "axis %lld is out of range for input 0 of rank %lld",
                        (long long)axis_, (long long)rank);
      *rows = sdk::element_count(x.dims.subspan(0, size_t(axis)));
      *n = sdk::element_count(x.dims.subspan(size_t(axis)));
      *cpr = *n;  // one affine pair per element
      return nullptr;
    }
    if (rank < 2)
      return nn::fail(label_, "input 0 must be N x C x ..., got shape %s",
                      nn::dims_str(x.dims).c_str());
    int64_t c = x.dim(1), spatial = sdk::element_count(x.dims.subspan(2));
    if (kind_ == RowNormKind::kInstance) {
      *rows = x.dim(0) * c;
      *n = spatial;
      *cpr = 1;
      return nullptr;
    }
    if (groups_ <= 0 || c % groups_)
      return nn::fail(label_, "num_groups %lld does not divide the %lld channels of input 0",
                      (long long)groups_, (long long)c);
    *rows = x.dim(0) * groups_;
    *n = c / groups_ * spatial;
    *cpr = per_group_affine_ ? 1 : c / groups_;
    return nullptr;
  }

  struct Affine {
    std::vector<int64_t> norm_dims;  // LayerNormalization: the normalized shape it was expanded to
    std::vector<double> scale, bias;
  };

  // This run's affine: the cached one when it fits, else read (and, with
  // constant inputs, cached for the next runs; runs may be concurrent).
  OnyxStatus* affine_for(sdk::ComputeContext& ctx, const sdk::Tensor& x, int64_t n,
                         std::shared_ptr<const Affine>* out) {
    std::vector<int64_t> norm_dims;
    if (constant_affine_) {
      int64_t axis = 0;
      nn::normalize_axis(axis_, int64_t(x.rank()), &axis);
      norm_dims.assign(x.dims.begin() + axis, x.dims.end());
      std::lock_guard<std::mutex> lock(cache_mutex_);
      if (cached_ && cached_->norm_dims == norm_dims) {
        *out = cached_;
        return nullptr;
      }
    }
    auto fresh = std::make_shared<Affine>();
    ONYX_SDK_RETURN_IF_ERROR(read_affine(ctx, x, n, &fresh->scale, &fresh->bias));
    fresh->norm_dims = std::move(norm_dims);
    if (constant_affine_) {
      std::lock_guard<std::mutex> lock(cache_mutex_);
      cached_ = fresh;
    }
    *out = std::move(fresh);
    return nullptr;
  }

  // Fills scale/bias with one entry per affine channel, in the order rows
  // meet them: layer: n entries; instance/group: C (or num_groups) entries.
  OnyxStatus* read_affine(sdk::ComputeContext& ctx, const sdk::Tensor& x, int64_t n,
                          std::vector<double>* scale, std::vector<double>* bias) const {
    if (kind_ != RowNormKind::kLayer) {
      int64_t want = per_group_affine_ ? groups_ : x.dim(1);
      ONYX_SDK_RETURN_IF_ERROR(norm::read_params(label_, ctx.in(1), 1, want, "scale", scale));
      return norm::read_params(label_, ctx.in(2), 2, want, "bias", bias);
    }
    int64_t axis = 0;
    nn::normalize_axis(axis_, int64_t(x.rank()), &axis);
    return layer_norm_affine(label_, ctx, x.dims.subspan(size_t(axis)), n, scale, bias);
  }

  // LayerNormalization's optional outputs: the mean and 1 / std of row r.
  static void layer_stats(const sdk::Tensor* stats, int64_t r, double mean, double inv_std) {
    for (size_t s = 0; s < 2; ++s) {
      if (!stats[s].raw) continue;
      const double v = s == 0 ? mean : inv_std;
      if (stats[s].dtype == ONYX_DTYPE_FLOAT64)
        stats[s].data<double>()[r] = v;
      else
        stats[s].data<float>()[r] = float(v);
    }
  }

  template <typename T>
  void row(const sdk::Tensor& x, const sdk::Tensor& y, const sdk::Tensor* stats, int64_t r,
           int64_t n, int64_t seg, const std::vector<double>& scale,
           const std::vector<double>& bias) const {
    const T* xr = x.data<T>() + r * n;
    T* yr = y.data<T>() + r * n;
    if constexpr (std::is_same_v<T, float>) {
      if (kind_ == RowNormKind::kLayer) {
        double mean = 0, inv_std = 0;
        if (!vec::layer_norm_row(xr, yr, n, scale.data(), bias.data(), epsilon_, &mean, &inv_std)) {
          const Moments m = layer_row(xr, yr, n, scale.data(), bias.data(), epsilon_);  // var: the 1 / std
          mean = m.mean, inv_std = m.var;
        }
        layer_stats(stats, r, mean, inv_std);
        return;
      }
    }
    Moments m = moments(xr, n);
    double inv_std = 1.0 / std::sqrt(m.var + epsilon_);
    if (kind_ == RowNormKind::kLayer) {
      for (int64_t k = 0; k < n; ++k)
        yr[k] = T((double(xr[k]) - m.mean) * inv_std * scale[size_t(k)] + bias[size_t(k)]);
      layer_stats(stats, r, m.mean, inv_std);
      return;
    }
    // Instance: row r is channel r % C. Group: row r is group r % G, whose
    // channels (or the group itself, opset 18) index scale in order.
    int64_t first = kind_ == RowNormKind::kInstance ? r % int64_t(scale.size())
                    : per_group_affine_             ? r % groups_
                                                    : r % groups_ * (n / seg);
    for (int64_t c = 0; c < n / seg; ++c) {
      double a = scale[size_t(first + c)] * inv_std;
      norm::affine(xr + c * seg, yr + c * seg, seg, a, bias[size_t(first + c)] - m.mean * a);
    }
  }

  std::string label_;
  RowNormKind kind_;
  double epsilon_;
  int64_t axis_, groups_;
  bool per_group_affine_;
  bool constant_affine_;
  std::mutex cache_mutex_;
  std::shared_ptr<const Affine> cached_;  // constant_affine_: the last expansion
  bool want_stats_[2] = {false, false};
  int32_t stats_dtype_[2] = {ONYX_DTYPE_FLOAT32, ONYX_DTYPE_FLOAT32};
};

std::string check_row_norm(const sdk::NodeInfo& node, RowNormKind kind) {
  size_t required = kind == RowNormKind::kLayer ? 2 : 3;
  for (size_t k = 1; k < required; ++k)
    if (!node.input_present(k)) return "input " + std::to_string(k) + " is required";
  if (kind == RowNormKind::kGroup && !node.has("num_groups"))
    return "attribute num_groups is required";
  for (size_t k = 1; k < 3 && k < node.outputs.size(); ++k) {
    if (!node.outputs[k].present) continue;
    int32_t t =
        node.outputs[k].dtype ? node.outputs[k].dtype : int32_t(node.get_int("stash_type", 1));
    if (t != ONYX_DTYPE_FLOAT32 && t != ONYX_DTYPE_FLOAT64)
      return "output " + std::to_string(k) + " of type " + sdk::dtype_name(t) + " is not supported";
  }
  return {};
}

}  // namespace

void register_row_norm_kernels(sdk::KernelRegistry& registry) {
  for (auto [op, kind] : {std::pair{"LayerNormalization", RowNormKind::kLayer},
                          std::pair{"InstanceNormalization", RowNormKind::kInstance},
                          std::pair{"GroupNormalization", RowNormKind::kGroup}})
    registry.add(sdk::KernelDefBuilder(op)
                     .input_types({0, 1, 2}, sdk::dtypes::kFloat)
                     .check([kind = kind](const sdk::NodeInfo& node) { return check_row_norm(node, kind); })
                     .create([kind = kind](const sdk::NodeInfo& node) { return std::make_unique<RowNormKernel>(node, kind); }));
}

}  // namespace onyx::cpu
