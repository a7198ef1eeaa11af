#include "mlp_fixture.h"

#include <cmath>

#include "proto_builder.h"
#include "test_models.h"

namespace onyx::mlp_fixture {

namespace tm = onyx::test_models;

MlpParams initial_params(uint64_t seed) {
  tm::Rng rng(seed);
  auto fill = [&](size_t n, double bound) {
    std::vector<double> v(n);
    for (double& x : v) x = double(rng.uniform(-bound, bound));
    return v;
  };
  MlpParams p;
  p.w1 = fill(size_t(kHidden * kIn), std::sqrt(6.0 / kIn));
  p.b1 = fill(size_t(kHidden), 0.1);
  p.w2 = fill(size_t(kClasses * kHidden), std::sqrt(6.0 / kHidden));
  p.b2 = fill(size_t(kClasses), 0.1);
  return p;
}

ONNX_NAMESPACE::ModelProto forward_model(const MlpParams& p) {
  auto f = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  ONNX_NAMESPACE::ModelProto model = tm::new_model("mlp_fixture");
  auto& g = *model.mutable_graph();
  tm::add_input(g, "x", {std::string("batch"), kIn});
  tm::add_initializer(g, "w1", {kHidden, kIn}, f(p.w1));
  tm::add_initializer(g, "b1", {kHidden}, f(p.b1));
  tm::add_initializer(g, "w2", {kClasses, kHidden}, f(p.w2));
  tm::add_initializer(g, "b2", {kClasses}, f(p.b2));
  tm::set_int(tm::add_node(g, "Gemm", "fc1", {"x", "w1", "b1"}, {"h"}), "transB", 1);
  tm::add_node(g, "Relu", "relu", {"h"}, {"a"});
  tm::set_int(tm::add_node(g, "Gemm", "fc2", {"a", "w2", "b2"}, {"logits"}), "transB", 1);
  tm::add_output(g, "logits", {std::string("batch"), kClasses});
  return model;
}

std::vector<Batch> make_batches(int count, int64_t batch_size, uint64_t seed) {
  tm::Rng rng(seed);
  std::vector<double> rule(size_t(kIn * kClasses));
  for (double& r : rule) r = rng.uniform(-1, 1);
  std::vector<Batch> batches(static_cast<size_t>(count));
  for (Batch& b : batches) {
    b.size = batch_size;
    b.x = rng.uniform_vector(size_t(batch_size * kIn), -1, 1);
    for (int64_t n = 0; n < batch_size; ++n) {
      int64_t best = 0;
      double best_score = -1e300;
      for (int64_t c = 0; c < kClasses; ++c) {
        double s = 0;
        for (int64_t i = 0; i < kIn; ++i) s += b.x[size_t(n * kIn + i)] * rule[size_t(i * kClasses + c)];
        if (s > best_score) best_score = s, best = c;
      }
      b.labels.push_back(best);
    }
  }
  return batches;
}

double loss_and_grads(const MlpParams& p, const Batch& b, MlpParams* g) {
  const int64_t B = b.size;
  std::vector<double> h(size_t(B * kHidden)), a(h.size()), logits(size_t(B * kClasses));
  for (int64_t n = 0; n < B; ++n)
    for (int64_t j = 0; j < kHidden; ++j) {
      double s = p.b1[size_t(j)];
      for (int64_t i = 0; i < kIn; ++i) s += double(b.x[size_t(n * kIn + i)]) * p.w1[size_t(j * kIn + i)];
      h[size_t(n * kHidden + j)] = s;
      a[size_t(n * kHidden + j)] = s > 0 ? s : 0;
    }
  for (int64_t n = 0; n < B; ++n)
    for (int64_t c = 0; c < kClasses; ++c) {
      double s = p.b2[size_t(c)];
      for (int64_t j = 0; j < kHidden; ++j) s += a[size_t(n * kHidden + j)] * p.w2[size_t(c * kHidden + j)];
      logits[size_t(n * kClasses + c)] = s;
    }
  double loss = 0;
  std::vector<double> dlogits(logits.size());
  for (int64_t n = 0; n < B; ++n) {
    double mx = -1e300;
    for (int64_t c = 0; c < kClasses; ++c) mx = std::max(mx, logits[size_t(n * kClasses + c)]);
    double sum = 0;
    for (int64_t c = 0; c < kClasses; ++c) sum += std::exp(logits[size_t(n * kClasses + c)] - mx);
    double log_sum = std::log(sum) + mx;
    loss += log_sum - logits[size_t(n * kClasses + b.labels[size_t(n)])];
    for (int64_t c = 0; c < kClasses; ++c) {
      double prob = std::exp(logits[size_t(n * kClasses + c)] - log_sum);
      dlogits[size_t(n * kClasses + c)] = (prob - (c == b.labels[size_t(n)] ? 1.0 : 0.0)) / double(B);
    }
  }
  loss /= double(B);
  if (!g) return loss;
  g->w1.assign(p.w1.size(), 0);
  g->b1.assign(p.b1.size(), 0);
  g->w2.assign(p.w2.size(), 0);
  g->b2.assign(p.b2.size(), 0);
  std::vector<double> dh(h.size(), 0);
  for (int64_t n = 0; n < B; ++n)
    for (int64_t c = 0; c < kClasses; ++c) {
      double d = dlogits[size_t(n * kClasses + c)];
      g->b2[size_t(c)] += d;
      for (int64_t j = 0; j < kHidden; ++j) {
        g->w2[size_t(c * kHidden + j)] += d * a[size_t(n * kHidden + j)];
        dh[size_t(n * kHidden + j)] += d * p.w2[size_t(c * kHidden + j)];
      }
    }
  for (int64_t n = 0; n < B; ++n)
    for (int64_t j = 0; j < kHidden; ++j) {
      double d = h[size_t(n * kHidden + j)] > 0 ? dh[size_t(n * kHidden + j)] : 0;
      g->b1[size_t(j)] += d;
      for (int64_t i = 0; i < kIn; ++i) g->w1[size_t(j * kIn + i)] += d * double(b.x[size_t(n * kIn + i)]);
    }
  return loss;
}

}  // namespace onyx::mlp_fixture
