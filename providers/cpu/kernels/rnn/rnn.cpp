// rnn.cpp: RNN, GRU and LSTM (opsets 7-22): forward, reverse and
// bidirectional, layout 0 and 1, sequence_lens, initial states, LSTM
// peepholes and input_forget, GRU linear_before_reset, clip and every ONNX
// activation function. Computed in double.
//
// Gate order in W/R/B: RNN (i), GRU (z, r, h), LSTM (i, o, f, c).
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

enum class Cell { kRnn, kGru, kLstm };

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Tanh") return std::tanh(x);
    if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "Relu") return x > 0 ? x : 0;
    if (name == "Affine") return alpha * x + beta;
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "Softsign") return x / (1 + std::fabs(x));
    if (name == "Softplus") return std::log1p(std::exp(x));
    return x;
  }
};

// Default alpha/beta of the activations that take them, when not given.
void default_params(Activation* a) {
  if (a->name == "LeakyRelu") a->alpha = 0.01;
  else if (a->name == "ThresholdedRelu" || a->name == "Elu") a->alpha = 1.0;
  else if (a->name == "HardSigmoid") a->alpha = 0.2, a->beta = 0.5;
  else if (a->name == "ScaledTanh" || a->name == "Affine") a->alpha = 1.0, a->beta = 1.0;
}

bool takes_alpha(const std::string& n) {
  return n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" || n == "HardSigmoid" ||
         n == "Elu";
}
bool takes_beta(const std::string& n) { return n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid"; }

// The activations of the node's directions, `*per_dir` each: the node's
// `activations` or the cell's defaults, with activation_alpha/beta handed
// out in order to those that take them.
std::vector<Activation> read_activations(const sdk::NodeInfo& node, Cell cell, int dirs, size_t* per_dir) {
  std::vector<std::string> defaults = cell == Cell::kRnn   ? std::vector<std::string>{"Tanh"}
                                      : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                           : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  const sdk::Attribute* names = node.attr("activations");
  std::vector<float> alphas = node.get_floats("activation_alpha"), betas = node.get_floats("activation_beta");
  std::vector<Activation> acts;
  size_t ai = 0, bi = 0;
  for (int d = 0; d < dirs; ++d)
    for (size_t k = 0; k < defaults.size(); ++k) {
      Activation a;
      size_t at = size_t(d) * defaults.size() + k;
      a.name = names && at < names->strings.size() ? names->strings[at] : defaults[k];
      default_params(&a);
      if (takes_alpha(a.name) && ai < alphas.size()) a.alpha = alphas[ai++];
      if (takes_beta(a.name) && bi < betas.size()) a.beta = betas[bi++];
      acts.push_back(a);
    }
  *per_dir = defaults.size();
  return acts;
}

class RecurrentKernel final : public sdk::Kernel {
 public:
  RecurrentKernel(const sdk::NodeInfo& node, Cell cell)
      : label_(util::node_label(node)),
        cell_(cell),
        hidden_(node.get_int("hidden_size", 0)),
        layout_(node.get_int("layout", 0)),
        clip_(node.get_float("clip", 0)),
        input_forget_(node.get_int("input_forget", 0) != 0),
        linear_before_reset_(node.get_int("linear_before_reset", 0) != 0) {
    std::string dir = node.get_string("direction", "forward");
    dirs_ = dir == "bidirectional" ? 2 : 1;
    reverse_only_ = dir == "reverse";
    gates_ = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
    acts_ = read_activations(node, cell, dirs_, &per_dir_);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), w = ctx.in(1), r = ctx.in(2);
    std::optional<sdk::Tensor> b = ctx.input(3), lens = ctx.input(4), h0 = ctx.input(5);
    std::optional<sdk::Tensor> c0 = cell_ == Cell::kLstm ? ctx.input(6) : std::nullopt;
    std::optional<sdk::Tensor> peep = cell_ == Cell::kLstm ? ctx.input(7) : std::nullopt;
    if (x.rank() != 3) return util::fail(label_, "X must be 3-D, got %s", util::dims_str(x.dims).c_str());
    const int64_t seq = layout_ ? x.dim(1) : x.dim(0), batch = layout_ ? x.dim(0) : x.dim(1), in = x.dim(2);
    if (r.rank() != 3) return util::fail(label_, "R must be 3-D, got %s", util::dims_str(r.dims).c_str());
    const int64_t H = hidden_ > 0 ? hidden_ : r.dim(2), G = gates_;
    if (w.rank() != 3 || w.dim(0) != dirs_ || w.dim(1) != G * H || w.dim(2) != in || r.rank() != 3 || r.dim(1) != G * H ||
        r.dim(2) != H)
      return util::fail(label_, "W %s / R %s do not match X %s, %d direction(s), hidden size %" PRId64,
                        util::dims_str(w.dims).c_str(), util::dims_str(r.dims).c_str(), util::dims_str(x.dims).c_str(),
                        dirs_, H);
    std::vector<int64_t> seq_len(size_t(batch), seq);
    if (lens) {
      std::vector<int64_t> v;
      if (!util::read_ints(*lens, &v) || int64_t(v.size()) != batch) return util::fail(label_, "sequence_lens must hold one int per batch entry");
      seq_len = v;
    }
    // X(t, b, k), state index (d, b, k) in layout 0 order.
    auto xv = [&](int64_t t, int64_t bb, int64_t k) {
      return narrow::load(x.dtype, x.raw, layout_ ? (bb * seq + t) * in + k : (t * batch + bb) * in + k);
    };
    auto state_at = [&](int64_t d, int64_t bb, int64_t k) {
      return layout_ ? (bb * dirs_ + d) * H + k : (d * batch + bb) * H + k;
    };
    std::vector<double> y(size_t(seq * dirs_ * batch * H), 0.0), hT(size_t(dirs_ * batch * H)), cT(hT.size());
    std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H)), gate(static_cast<size_t>(G * H)), rec(static_cast<size_t>(G * H));
    for (int d = 0; d < dirs_; ++d) {
      const bool reverse = reverse_only_ || d == 1;
      const Activation* act = &acts_[size_t(d) * per_dir_];
      auto wv = [&](int64_t row, int64_t k) { return narrow::load(w.dtype, w.raw, (d * G * H + row) * in + k); };
      auto rv = [&](int64_t row, int64_t k) { return narrow::load(r.dtype, r.raw, (d * G * H + row) * H + k); };
      auto bias = [&](int64_t i) { return b ? narrow::load(b->dtype, b->raw, d * 2 * G * H + i) : 0.0; };
      for (int64_t bb = 0; bb < batch; ++bb) {
        for (int64_t k = 0; k < H; ++k) {
          h[size_t(k)] = h0 ? narrow::load(h0->dtype, h0->raw, state_at(d, bb, k)) : 0.0;
          c[size_t(k)] = c0 ? narrow::load(c0->dtype, c0->raw, state_at(d, bb, k)) : 0.0;
        }
        const int64_t len = std::min(seq_len[size_t(bb)], seq);
        for (int64_t step = 0; step < len; ++step) {
          const int64_t t = reverse ? len - 1 - step : step;
          for (int64_t row = 0; row < G * H; ++row) {
            double gx = bias(row), gr = bias(G * H + row);
            for (int64_t k = 0; k < in; ++k) gx += xv(t, bb, k) * wv(row, k);
            // GRU's hidden gate may apply the reset gate first: computed below.
            bool deferred = cell_ == Cell::kGru && row >= 2 * H && !linear_before_reset_;
            if (!deferred)
              for (int64_t k = 0; k < H; ++k) gr += h[size_t(k)] * rv(row, k);
            gate[size_t(row)] = gx;
            rec[size_t(row)] = gr;
          }
          step_cell(act, h, c, gate, rec, rv, bias, peep, d, H);
          for (int64_t k = 0; k < H; ++k) {
            int64_t at = layout_ ? ((bb * seq + t) * dirs_ + d) * H + k : ((t * dirs_ + d) * batch + bb) * H + k;
            y[size_t(at)] = h[size_t(k)];
          }
        }
        for (int64_t k = 0; k < H; ++k) {
          hT[size_t(state_at(d, bb, k))] = h[size_t(k)];
          cT[size_t(state_at(d, bb, k))] = c[size_t(k)];
        }
      }
    }
    const std::vector<int64_t> y_dims = layout_ ? std::vector<int64_t>{batch, seq, dirs_, H} : std::vector<int64_t>{seq, dirs_, batch, H};
    const std::vector<int64_t> s_dims = layout_ ? std::vector<int64_t>{batch, dirs_, H} : std::vector<int64_t>{dirs_, batch, H};
    const std::vector<double>* outs[3] = {&y, &hT, &cT};
    for (size_t k = 0; k < 3 && k < wanted_.size(); ++k) {
      if (!wanted_[k]) continue;
      sdk::Tensor o;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(k, x.dtype, k == 0 ? y_dims : s_dims, &o));
      for (size_t i = 0; i < outs[k]->size(); ++i) narrow::store(o.dtype, o.raw, int64_t(i), (*outs[k])[i], true);
    }
    return nullptr;
  }

  void set_outputs(const sdk::NodeInfo& node) {
    for (const auto& o : node.outputs) wanted_.push_back(o.present);
  }

 private:
  double clip(double v) const { return clip_ > 0 ? std::clamp(v, -clip_, clip_) : v; }

  template <typename Rv, typename Bias>
  void step_cell(const Activation* act, std::vector<double>& h, std::vector<double>& c, const std::vector<double>& gx,
                 const std::vector<double>& gr, Rv rv, Bias bias, const std::optional<sdk::Tensor>& peep, int d,
                 int64_t H) const {
    if (cell_ == Cell::kRnn) {
      for (int64_t k = 0; k < H; ++k) h[size_t(k)] = act[0](clip(gx[size_t(k)] + gr[size_t(k)]));
      return;
    }
    if (cell_ == Cell::kGru) {
      std::vector<double> z(static_cast<size_t>(H)), rg(static_cast<size_t>(H)), hh(static_cast<size_t>(H));
      for (int64_t k = 0; k < H; ++k) {
        z[size_t(k)] = act[0](clip(gx[size_t(k)] + gr[size_t(k)]));
        rg[size_t(k)] = act[0](clip(gx[size_t(H + k)] + gr[size_t(H + k)]));
      }
      for (int64_t k = 0; k < H; ++k) {
        double rec = gr[size_t(2 * H + k)];
        if (linear_before_reset_) {
          rec = rg[size_t(k)] * rec;  // rec already holds h R^T + Rb
        } else {
          rec = bias(3 * H + 2 * H + k);
          for (int64_t j = 0; j < H; ++j) rec += rg[size_t(j)] * h[size_t(j)] * rv(2 * H + k, j);
        }
        hh[size_t(k)] = act[1](clip(gx[size_t(2 * H + k)] + rec));
      }
      for (int64_t k = 0; k < H; ++k) h[size_t(k)] = (1 - z[size_t(k)]) * hh[size_t(k)] + z[size_t(k)] * h[size_t(k)];
      return;
    }
    // LSTM: gates i, o, f, c; peepholes P = (i, o, f).
    auto p = [&](int64_t gate, int64_t k) {
      return peep ? narrow::load(peep->dtype, peep->raw, d * 3 * H + gate * H + k) : 0.0;
    };
    for (int64_t k = 0; k < H; ++k) {
      auto pre = [&](int64_t g) { return gx[size_t(g * H + k)] + gr[size_t(g * H + k)]; };
      double i = act[0](clip(pre(0) + p(0, k) * c[size_t(k)]));
      double f = input_forget_ ? 1 - i : act[0](clip(pre(2) + p(2, k) * c[size_t(k)]));
      double cand = act[1](clip(pre(3)));
      c[size_t(k)] = f * c[size_t(k)] + i * cand;
      double o = act[0](clip(pre(1) + p(1, k) * c[size_t(k)]));
      h[size_t(k)] = o * act[2](c[size_t(k)]);
    }
  }

  std::string label_;
  Cell cell_;
  int64_t hidden_, layout_;
  double clip_;
  bool input_forget_, linear_before_reset_;
  int dirs_ = 1;
  bool reverse_only_ = false;
  int64_t gates_ = 1;
  std::vector<Activation> acts_;
  size_t per_dir_ = 1;
  std::vector<bool> wanted_;
};

}  // namespace

void register_rnn_kernels(sdk::KernelRegistry& registry) {
  for (auto [op, cell] : {std::pair{"RNN", Cell::kRnn}, std::pair{"GRU", Cell::kGru}, std::pair{"LSTM", Cell::kLstm}})
    registry.add(sdk::KernelDefBuilder(op)
                     .since(7)
                     .inputs(3, cell == Cell::kLstm ? 8 : 6)
                     .input_types({0, 1, 2, 3, 5, 6, 7}, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                     .create([cell = cell](const sdk::NodeInfo& node) {
                       auto k = std::make_unique<RecurrentKernel>(node, cell);
                       k->set_outputs(node);
                       return k;
                     }));
}

}  // namespace onyx::cpu
