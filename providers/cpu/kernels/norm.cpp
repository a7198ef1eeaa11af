// norm.cpp: BatchNormalization, LayerNormalization, InstanceNormalization,
// GroupNormalization, LRN and MeanVarianceNormalization (float32, float64).
//
// Statistics are accumulated in double with two passes (mean, then the mean
// of squared deviations), which keeps the variance accurate when the mean is
// large compared with the spread.
#include <algorithm>
#include <cmath>

#include "kernels/nn.h"

namespace onyx::cpu {
namespace {

constexpr std::initializer_list<int32_t> kFloatTypes = {ONYX_DTYPE_FLOAT32, ONYX_DTYPE_FLOAT64};

struct Moments {
  double mean = 0, var = 0;  // population variance
};

template <typename T>
Moments moments(const T* x, int64_t n) {
  Moments m;
  if (n == 0) return m;
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += double(x[k]);
  m.mean = sum / double(n);
  double sq = 0;
  for (int64_t k = 0; k < n; ++k) {
    double d = double(x[k]) - m.mean;
    sq += d * d;
  }
  m.var = sq / double(n);
  return m;
}

// y[k] = x[k] * a + b over n elements.
template <typename T>
void affine(const T* x, T* y, int64_t n, double a, double b) {
  T ta = T(a), tb = T(b);
  for (int64_t k = 0; k < n; ++k) y[k] = x[k] * ta + tb;
}

// A float32/float64 parameter tensor read into doubles, checking its size.
OnyxStatus* read_params(const std::string& label, const sdk::Tensor& t, size_t input, int64_t want,
                        const char* what, std::vector<double>* out) {
  if (t.size() != want)
    return nn::fail(label, "input %zu (%s) has shape %s; expected %lld elements", input, what,
                    nn::dims_str(t.dims).c_str(), (long long)want);
  out->resize(size_t(want));
  for (int64_t k = 0; k < want; ++k) (*out)[size_t(k)] = nn::element_as_double(t, k);
  return nullptr;
}

// ---------------------------------------------------------------------------
// BatchNormalization
// ---------------------------------------------------------------------------

// X is viewed as [N, F, S]: F = C and S = the spatial size, or, for the
// legacy spatial = 0 form, F = C x spatial (one statistic per activation)
// and S = 1.
class BatchNormKernel final : public sdk::Kernel {
 public:
  explicit BatchNormKernel(const sdk::NodeInfo& node)
      : label_(nn::node_label(node)),
        epsilon_(node.get_float("epsilon", 1e-5)),
        momentum_(node.get_float("momentum", 0.9)),
        spatial_(node.get_int("spatial", 1) != 0),
        // Training: opset 14+ says so with training_mode; before opset 7 with
        // an explicit is_test = 0. (ONNX's 6 -> 7 version converter reads an
        // absent is_test as inference and refuses is_test = 0 as training.)
        // Opsets 7-13 train only when the statistic outputs are wanted, which
        // supports() declines.
        training_(node.opset >= 14
                      ? node.get_int("training_mode", 0) != 0
                      : node.opset < 7 && node.has("is_test") && node.get_int("is_test", 1) == 0),
        want_running_{node.opset >= 14 && node.outputs.size() > 1 && node.outputs[1].present,
                      node.opset >= 14 && node.outputs.size() > 2 && node.outputs[2].present} {}

  // Statistics come first; then each element is read once and written in place.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    nn::output0_may_overwrite_input0(out);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    if (x.rank() < 2)
      return nn::fail(label_, "input 0 must be N x C x ..., got shape %s",
                      nn::dims_str(x.dims).c_str());
    const int64_t n = x.dim(0), c = x.dim(1), spatial = x.size() / std::max<int64_t>(1, n * c);
    const int64_t features = spatial_ ? c : c * spatial, s = spatial_ ? spatial : 1;
    std::vector<double> scale, bias, mean, var;
    static const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
    std::vector<double>* params[] = {nullptr, &scale, &bias, &mean, &var};
    for (size_t k = 1; k < 5; ++k)
      ONYX_SDK_RETURN_IF_ERROR(read_params(label_, ctx.in(k), k, features, names[k], params[k]));

    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    std::vector<double> batch_mean(static_cast<size_t>(features)), batch_var(batch_mean);
    if (training_) {
      if (n * s == 0) return nn::fail(label_, "training mode needs a non-empty batch");
      if (x.dtype == ONYX_DTYPE_FLOAT64)
        batch_stats<double>(ctx, x, n, features, s, &batch_mean, &batch_var);
      else
        batch_stats<float>(ctx, x, n, features, s, &batch_mean, &batch_var);
      mean = batch_mean;
      var = batch_var;
    }
    // y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a.
    std::vector<double> a(static_cast<size_t>(features)), b(a);
    for (size_t f = 0; f < a.size(); ++f) {
      a[f] = scale[f] / std::sqrt(var[f] + epsilon_);
      b[f] = bias[f] - mean[f] * a[f];
    }
    ctx.parallel_for(size_t(n * features), nn::grain_for(double(s)), [&](size_t lo, size_t hi) {
      for (size_t p = lo; p < hi; ++p) {
        size_t f = p % size_t(features), off = p * size_t(s);
        if (x.dtype == ONYX_DTYPE_FLOAT64)
          affine(x.data<double>() + off, y.data<double>() + off, s, a[f], b[f]);
        else
          affine(x.data<float>() + off, y.data<float>() + off, s, a[f], b[f]);
      }
    });
    // running_mean/var = input * momentum + batch * (1 - momentum), typed like the input.
    for (size_t k = 1; k <= 2; ++k) {
      if (!want_running_[k - 1]) continue;
      sdk::Tensor in = ctx.in(k + 2), out;
      const std::vector<double>& stats = k == 1 ? batch_mean : batch_var;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(k, in.dtype, in.dims, &out));
      for (int64_t f = 0; f < features; ++f) {
        double v = nn::element_as_double(in, f) * momentum_ + stats[size_t(f)] * (1 - momentum_);
        if (out.dtype == ONYX_DTYPE_FLOAT64)
          out.data<double>()[f] = v;
        else
          out.data<float>()[f] = float(v);
      }
    }
    return nullptr;
  }

 private:
  template <typename T>
  static void batch_stats(sdk::ComputeContext& ctx, const sdk::Tensor& x, int64_t n,
                          int64_t features, int64_t s, std::vector<double>* mean,
                          std::vector<double>* var) {
    const T* xd = x.data<T>();
    ctx.parallel_for(size_t(features), nn::grain_for(double(n * s) * 2), [&](size_t lo, size_t hi) {
      for (size_t f = lo; f < hi; ++f) {
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < n; ++i) {
          const T* p = xd + (i * features + int64_t(f)) * s;
          for (int64_t k = 0; k < s; ++k) sum += double(p[k]);
        }
        double m = sum / double(n * s);
        for (int64_t i = 0; i < n; ++i) {
          const T* p = xd + (i * features + int64_t(f)) * s;
          for (int64_t k = 0; k < s; ++k) sq += (double(p[k]) - m) * (double(p[k]) - m);
        }
        (*mean)[f] = m;
        (*var)[f] = sq / double(n * s);
      }
    });
  }

  std::string label_;
  double epsilon_, momentum_;
  bool spatial_, training_;
  bool want_running_[2];  // outputs 1 (running_mean) and 2 (running_var)
};

std::string check_batch_norm(const sdk::NodeInfo& node) {
  if (std::string e = nn::require_types(node, {0, 1, 2, 3, 4}, kFloatTypes); !e.empty()) return e;
  for (size_t k = 1; k < 5; ++k)
    if (!node.input_present(k)) return "input " + std::to_string(k) + " is required";
  bool extra_outputs = false;
  for (size_t k = 1; k < node.outputs.size(); ++k) extra_outputs |= node.outputs[k].present;
  if (node.opset >= 14) {
    if (extra_outputs && node.get_int("training_mode", 0) == 0)
      return "outputs running_mean/running_var need training_mode = 1";
  } else if (extra_outputs) {
    return "the training outputs (mean, var, saved_mean, saved_var) of opset " +
           std::to_string(node.opset) + " are not supported; opset 14+ training_mode is";
  }
  return {};
}

// ---------------------------------------------------------------------------
// Layer, instance and group normalization: rows of contiguous elements, each
// normalized with its own statistics, then scaled per channel or element.
// ---------------------------------------------------------------------------

enum class RowNormKind { kLayer, kInstance, kGroup };

class RowNormKernel final : public sdk::Kernel {
 public:
  RowNormKernel(const sdk::NodeInfo& node, RowNormKind kind)
      : label_(nn::node_label(node)),
        kind_(kind),
        epsilon_(node.get_float("epsilon", 1e-5)),
        axis_(node.get_int("axis", -1)),
        groups_(node.get_int("num_groups", 1)),
        per_group_affine_(kind == RowNormKind::kGroup && node.opset < 21) {
    for (size_t k = 1; k < 3 && k < node.outputs.size(); ++k) {
      want_stats_[k - 1] = node.outputs[k].present;
      stats_dtype_[k - 1] =
          node.outputs[k].dtype ? node.outputs[k].dtype : int32_t(node.get_int("stash_type", 1));
    }
  }

  // A row's statistics come before its writes; rows are disjoint.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    nn::output0_may_overwrite_input0(out);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t rows = 0, n = 0, channels_per_row = 1;
    ONYX_SDK_RETURN_IF_ERROR(layout(x, &rows, &n, &channels_per_row));
    // Expanded per-element (layer) or per-channel (instance, group) affine.
    std::vector<double> scale, bias;
    ONYX_SDK_RETURN_IF_ERROR(read_affine(ctx, x, n, &scale, &bias));

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
    ctx.parallel_for(size_t(rows), nn::grain_for(double(n) * 3), [&](size_t lo, size_t hi) {
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

  // Fills scale/bias with one entry per affine channel, in the order rows
  // meet them: layer: n entries; instance/group: C (or num_groups) entries.
  OnyxStatus* read_affine(sdk::ComputeContext& ctx, const sdk::Tensor& x, int64_t n,
                          std::vector<double>* scale, std::vector<double>* bias) const {
    if (kind_ != RowNormKind::kLayer) {
      int64_t want = per_group_affine_ ? groups_ : x.dim(1);
      ONYX_SDK_RETURN_IF_ERROR(read_params(label_, ctx.in(1), 1, want, "scale", scale));
      return read_params(label_, ctx.in(2), 2, want, "bias", bias);
    }
    // LayerNormalization: scale and the optional bias broadcast to the
    // normalized shape dims[axis:] (numpy rules, aligned at the right).
    int64_t axis = 0;
    nn::normalize_axis(axis_, int64_t(x.rank()), &axis);
    std::span<const int64_t> norm = x.dims.subspan(size_t(axis));
    for (size_t k = 1; k < 3; ++k) {
      std::vector<double>* out = k == 1 ? scale : bias;
      std::optional<sdk::Tensor> t = ctx.input(k);
      if (!t) {
        out->assign(size_t(n), k == 1 ? 1.0 : 0.0);
        continue;
      }
      if (t->rank() > norm.size())
        return nn::fail(label_, "input %zu shape %s does not broadcast to the normalized shape %s",
                        k, nn::dims_str(t->dims).c_str(), nn::dims_str(norm).c_str());
      size_t lead = norm.size() - t->rank();
      for (size_t d = 0; d < t->rank(); ++d)
        if (t->dim(d) != 1 && t->dim(d) != norm[lead + d])
          return nn::fail(label_,
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

  template <typename T>
  void row(const sdk::Tensor& x, const sdk::Tensor& y, const sdk::Tensor* stats, int64_t r,
           int64_t n, int64_t seg, const std::vector<double>& scale,
           const std::vector<double>& bias) const {
    const T* xr = x.data<T>() + r * n;
    T* yr = y.data<T>() + r * n;
    Moments m = moments(xr, n);
    double inv_std = 1.0 / std::sqrt(m.var + epsilon_);
    if (kind_ == RowNormKind::kLayer) {
      for (int64_t k = 0; k < n; ++k)
        yr[k] = T((double(xr[k]) - m.mean) * inv_std * scale[size_t(k)] + bias[size_t(k)]);
      for (size_t s = 0; s < 2; ++s) {
        if (!stats[s].raw) continue;
        double v = s == 0 ? m.mean : inv_std;
        if (stats[s].dtype == ONYX_DTYPE_FLOAT64)
          stats[s].data<double>()[r] = v;
        else
          stats[s].data<float>()[r] = float(v);
      }
      return;
    }
    // Instance: row r is channel r % C. Group: row r is group r % G, whose
    // channels (or the group itself, opset 18) index scale in order.
    int64_t first = kind_ == RowNormKind::kInstance ? r % int64_t(scale.size())
                    : per_group_affine_             ? r % groups_
                                                    : r % groups_ * (n / seg);
    for (int64_t c = 0; c < n / seg; ++c) {
      double a = scale[size_t(first + c)] * inv_std;
      affine(xr + c * seg, yr + c * seg, seg, a, bias[size_t(first + c)] - m.mean * a);
    }
  }

  std::string label_;
  RowNormKind kind_;
  double epsilon_;
  int64_t axis_, groups_;
  bool per_group_affine_;
  bool want_stats_[2] = {false, false};
  int32_t stats_dtype_[2] = {ONYX_DTYPE_FLOAT32, ONYX_DTYPE_FLOAT32};
};

std::string check_row_norm(const sdk::NodeInfo& node, RowNormKind kind) {
  if (std::string e = nn::require_types(node, {0, 1, 2}, kFloatTypes); !e.empty()) return e;
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

// ---------------------------------------------------------------------------
// LRN: y = x / (bias + alpha / size * square_sum)^beta, the square sum running
// over the channels max(0, c - floor((size-1)/2)) .. min(C-1, c + ceil((size-1)/2)).
// ---------------------------------------------------------------------------

class LrnKernel final : public sdk::Kernel {
 public:
  explicit LrnKernel(const sdk::NodeInfo& node)
      : label_(nn::node_label(node)),
        alpha_(node.get_float("alpha", 1e-4)),
        beta_(node.get_float("beta", 0.75)),
        bias_(node.get_float("bias", 1.0)),
        size_(node.get_int("size", 1)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    if (x.rank() < 2)
      return nn::fail(label_, "input 0 must be N x C x ..., got shape %s",
                      nn::dims_str(x.dims).c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    const int64_t c = x.dim(1), s = sdk::element_count(x.dims.subspan(2));
    ctx.parallel_for(
        size_t(x.dim(0) * c), nn::grain_for(double(s * size_)), [&](size_t lo, size_t hi) {
          std::vector<double> sq(static_cast<size_t>(s));
          for (size_t p = lo; p < hi; ++p) {
            int64_t ch = int64_t(p) % c, plane0 = int64_t(p) - ch;  // plane of channel 0
            int64_t first = std::max<int64_t>(0, ch - (size_ - 1) / 2);
            int64_t last = std::min<int64_t>(c - 1, ch + size_ / 2);
            if (x.dtype == ONYX_DTYPE_FLOAT64)
              plane<double>(x, y, plane0, int64_t(p), first, last, s, &sq);
            else
              plane<float>(x, y, plane0, int64_t(p), first, last, s, &sq);
          }
        });
    return nullptr;
  }

 private:
  template <typename T>
  void plane(const sdk::Tensor& x, const sdk::Tensor& y, int64_t plane0, int64_t p, int64_t first,
             int64_t last, int64_t s, std::vector<double>* sq) const {
    std::fill(sq->begin(), sq->end(), 0.0);
    for (int64_t i = first; i <= last; ++i) {
      const T* xi = x.data<T>() + (plane0 + i) * s;
      for (int64_t k = 0; k < s; ++k) (*sq)[size_t(k)] += double(xi[k]) * double(xi[k]);
    }
    const T* xp = x.data<T>() + p * s;
    T* yp = y.data<T>() + p * s;
    double a = alpha_ / double(size_);
    for (int64_t k = 0; k < s; ++k)
      yp[k] = T(double(xp[k]) / std::pow(bias_ + a * (*sq)[size_t(k)], beta_));
  }

  std::string label_;
  double alpha_, beta_, bias_;
  int64_t size_;
};

// ---------------------------------------------------------------------------
// MeanVarianceNormalization: y = (x - mean) / (sqrt(var) + 1e-9) with the
// statistics taken over `axes` (the epsilon is the one of the ONNX function
// body).
// ---------------------------------------------------------------------------

class MvnKernel final : public sdk::Kernel {
 public:
  explicit MvnKernel(const sdk::NodeInfo& node)
      : label_(nn::node_label(node)), axes_(node.get_ints("axes", {0, 2, 3})) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    const int64_t rank = int64_t(x.rank());
    // group_stride[d]: step of the statistic index along dim d (0 if reduced).
    std::vector<bool> reduced(size_t(rank), false);
    for (int64_t a : axes_) {
      int64_t axis = 0;
      if (!nn::normalize_axis(a, rank, &axis))
        return nn::fail(label_, "axis %lld is out of range for input 0 of rank %lld", (long long)a,
                        (long long)rank);
      reduced[size_t(axis)] = true;
    }
    std::vector<int64_t> group_stride(size_t(rank), 0);
    int64_t groups = 1;
    for (int64_t d = rank; d-- > 0;)
      if (!reduced[size_t(d)]) {
        group_stride[size_t(d)] = groups;
        groups *= x.dim(size_t(d));
      }
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    if (x.size() == 0) return nullptr;
    const double count = double(x.size() / groups);
    std::vector<double> mean(size_t(groups), 0.0), var(size_t(groups), 0.0);
    bool f64 = x.dtype == ONYX_DTYPE_FLOAT64;
    auto at = [&](int64_t i) { return f64 ? x.data<double>()[i] : double(x.data<float>()[i]); };
    for_each_group_index(x.dims, group_stride,
                         [&](int64_t i, int64_t g) { mean[size_t(g)] += at(i); });
    for (double& m : mean) m /= count;
    for_each_group_index(x.dims, group_stride, [&](int64_t i, int64_t g) {
      double d = at(i) - mean[size_t(g)];
      var[size_t(g)] += d * d;
    });
    for (double& v : var) v = 1.0 / (std::sqrt(v / count) + 1e-9);  // now 1 / (std + eps)
    for_each_group_index(x.dims, group_stride, [&](int64_t i, int64_t g) {
      double v = (at(i) - mean[size_t(g)]) * var[size_t(g)];
      if (f64)
        y.data<double>()[i] = v;
      else
        y.data<float>()[i] = float(v);
    });
    return nullptr;
  }

 private:
  // Calls fn(flat index, statistic index) for every element in order.
  template <typename Fn>
  static void for_each_group_index(std::span<const int64_t> dims,
                                   const std::vector<int64_t>& group_stride, Fn&& fn) {
    std::vector<int64_t> pos(dims.size(), 0);
    int64_t total = sdk::element_count(dims), g = 0;
    for (int64_t i = 0; i < total; ++i) {
      fn(i, g);
      for (size_t d = dims.size(); d-- > 0;) {  // odometer step
        g += group_stride[d];
        if (++pos[d] < dims[d]) break;
        g -= group_stride[d] * dims[d];
        pos[d] = 0;
      }
    }
  }

  std::string label_;
  std::vector<int64_t> axes_;
};

}  // namespace

void register_norm_kernels(sdk::KernelRegistry& registry) {
  sdk::KernelDef bn;
  bn.op_type = "BatchNormalization";
  bn.supports = check_batch_norm;
  bn.create = [](const sdk::NodeInfo& node) { return std::make_unique<BatchNormKernel>(node); };
  registry.add(std::move(bn));

  for (auto [op, kind] : {std::pair{"LayerNormalization", RowNormKind::kLayer},
                          std::pair{"InstanceNormalization", RowNormKind::kInstance},
                          std::pair{"GroupNormalization", RowNormKind::kGroup}}) {
    sdk::KernelDef def;
    def.op_type = op;
    def.supports = [kind](const sdk::NodeInfo& node) { return check_row_norm(node, kind); };
    def.create = [kind](const sdk::NodeInfo& node) {
      return std::make_unique<RowNormKernel>(node, kind);
    };
    registry.add(std::move(def));
  }
  sdk::KernelDef lrn;
  lrn.op_type = "LRN";
  lrn.supports = [](const sdk::NodeInfo& node) -> std::string {
    if (!node.has("size")) return "attribute size is required";
    if (node.get_int("size", 0) <= 0) return "attribute size must be positive";
    return nn::require_types(node, {0}, kFloatTypes);
  };
  lrn.create = [](const sdk::NodeInfo& node) { return std::make_unique<LrnKernel>(node); };
  registry.add(std::move(lrn));

  sdk::KernelDef mvn;
  mvn.op_type = "MeanVarianceNormalization";
  mvn.supports = [](const sdk::NodeInfo& node) {
    return nn::require_types(node, {0}, kFloatTypes);
  };
  mvn.create = [](const sdk::NodeInfo& node) { return std::make_unique<MvnKernel>(node); };
  registry.add(std::move(mvn));
}

}  // namespace onyx::cpu
