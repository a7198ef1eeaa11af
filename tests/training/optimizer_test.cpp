// Optimizer plugins loaded from disk, their update functions inlined into an
// optimizer model and run on the CPU provider, against float64
// implementations of the same formulas written here from the papers and
// PyTorch's documented semantics. Five steps with random gradients.
// Tolerance: 2e-6 relative to max(1, |value|): float32 arithmetic of a few
// dozen ops per element (~1e-7 each) over five steps.
#include <gtest/gtest.h>
#include <onyx_optimizer.h>

#include <cmath>
#include <cstddef>
#include <map>

#include "session/session.h"
#include "ir/onnx_import.h"
#include "training/optimizer_model.h"

namespace onyx::runtime::training {
namespace {

struct Reference {
  // param, grad, slots (by name) -> updated param and slots, in double.
  virtual void update(std::vector<double>& p, const std::vector<double>& g,
                      std::map<std::string, std::vector<double>>& slots, double lr, double step,
                      const std::map<std::string, double>& h) const = 0;
  virtual ~Reference() = default;
};

struct SgdReference : Reference {
  void update(std::vector<double>& p, const std::vector<double>& g, std::map<std::string, std::vector<double>>& s,
              double lr, double, const std::map<std::string, double>& h) const override {
    auto& buf = s["momentum_buffer"];
    for (size_t i = 0; i < p.size(); ++i) {
      double gi = g[i] + h.at("weight_decay") * p[i];
      buf[i] = h.at("momentum") * buf[i] + gi;
      double d = h.at("nesterov") != 0 ? gi + h.at("momentum") * buf[i] : buf[i];
      p[i] -= lr * d;
    }
  }
};

struct AdamWReference : Reference {
  void update(std::vector<double>& p, const std::vector<double>& g, std::map<std::string, std::vector<double>>& s,
              double lr, double t, const std::map<std::string, double>& h) const override {
    double b1 = h.at("beta1"), b2 = h.at("beta2");
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1 - lr * h.at("weight_decay");
      s["m"][i] = b1 * s["m"][i] + (1 - b1) * g[i];
      s["v"][i] = b2 * s["v"][i] + (1 - b2) * g[i] * g[i];
      double mh = s["m"][i] / (1 - std::pow(b1, t)), vh = s["v"][i] / (1 - std::pow(b2, t));
      p[i] -= lr * mh / (std::sqrt(vh) + h.at("epsilon"));
    }
  }
};

struct LambReference : Reference {
  void update(std::vector<double>& p, const std::vector<double>& g, std::map<std::string, std::vector<double>>& s,
              double lr, double t, const std::map<std::string, double>& h) const override {
    double b1 = h.at("beta1"), b2 = h.at("beta2");
    std::vector<double> r(p.size());
    double pn = 0, rn = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      s["m"][i] = b1 * s["m"][i] + (1 - b1) * g[i];
      s["v"][i] = b2 * s["v"][i] + (1 - b2) * g[i] * g[i];
      double mh = s["m"][i] / (1 - std::pow(b1, t)), vh = s["v"][i] / (1 - std::pow(b2, t));
      r[i] = mh / (std::sqrt(vh) + h.at("epsilon")) + h.at("weight_decay") * p[i];
      pn += p[i] * p[i];
      rn += r[i] * r[i];
    }
    pn = std::sqrt(pn);
    rn = std::sqrt(rn);
    double trust = pn > 0 && rn > 0 ? pn / rn : 1.0;
    for (size_t i = 0; i < p.size(); ++i) p[i] -= lr * trust * r[i];
  }
};

float next_uniform(uint64_t& state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return float(double(state >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

Tensor scalar(float v) {
  Tensor t = Tensor::allocate(ONYX_DTYPE_FLOAT32, {});
  *t.data_as<float>() = v;
  return t;
}

// Runs `steps` optimizer steps through the ONNX model and the reference.
void check_optimizer(const std::string& name, const Reference& ref, std::map<std::string, float> overrides,
                     float max_grad_norm = 0) {
  SCOPED_TRACE(name);
  auto desc = load_optimizer_plugin(name, {ONYX_OPTIMIZER_DIR});
  ASSERT_TRUE(desc.ok()) << desc.status().to_string();
  std::vector<OptimizerParameter> params = {{"w", ONYX_DTYPE_FLOAT32, {3, 4}}, {"b", ONYX_DTYPE_FLOAT32, {4}}};
  auto proto = build_optimizer_model(*desc, params);
  ASSERT_TRUE(proto.ok()) << proto.status().to_string();
  auto info = read_optimizer_model_info(*proto);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->parameters, (std::vector<std::string>{"w", "b"}));
  std::string bytes = proto->SerializeAsString();
  auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  SessionOptions options;
  options.fallback = FallbackPolicy::kFail;
  auto session = Session::create(registry, std::move(model).value(), options);
  ASSERT_TRUE(session.ok()) << session.status().to_string();

  std::map<std::string, double> h;
  for (const auto& hp : desc->hyperparameters)
    h[hp.name] = overrides.count(hp.name) ? overrides[hp.name] : hp.default_value;
  uint64_t rng = 42;
  std::map<std::string, std::vector<float>> value, grad;
  std::map<std::string, std::map<std::string, std::vector<float>>> slots;
  std::map<std::string, std::vector<double>> ref_value;
  std::map<std::string, std::map<std::string, std::vector<double>>> ref_slots;
  for (const auto& p : params) {
    size_t n = size_t(element_count(p.shape));
    for (size_t i = 0; i < n; ++i) value[p.name].push_back(next_uniform(rng));
    ref_value[p.name].assign(value[p.name].begin(), value[p.name].end());
    for (const auto& s : desc->slots) {
      slots[p.name][s.name].assign(n, s.initial_value);
      ref_slots[p.name][s.name].assign(n, s.initial_value);
    }
  }
  const float lr = 0.05f;
  for (int step = 1; step <= 5; ++step) {
    std::vector<std::pair<std::string, Tensor>> feed = {
        {"lr", scalar(lr)}, {"step", scalar(float(step))}, {"max_grad_norm", scalar(max_grad_norm)}};
    for (const auto& [k, v] : h) feed.emplace_back(k, scalar(float(v)));
    double norm_sq = 0;
    for (const auto& p : params) {
      grad[p.name].clear();
      for (size_t i = 0; i < value[p.name].size(); ++i) {
        grad[p.name].push_back(next_uniform(rng));
        norm_sq += double(grad[p.name].back()) * grad[p.name].back();
      }
      auto wrap = [&](std::vector<float>& v) { return Tensor::wrap(ONYX_DTYPE_FLOAT32, p.shape, v.data(), nullptr); };
      feed.emplace_back(p.name, wrap(value[p.name]));
      feed.emplace_back(gradient_name(p.name), wrap(grad[p.name]));
      for (const auto& s : desc->slots) feed.emplace_back(slot_name(p.name, s.name), wrap(slots[p.name][s.name]));
    }
    auto out = (*session)->run(feed);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    double norm = std::sqrt(norm_sq);
    EXPECT_NEAR(*(*out)[0].data_as<float>(), norm, 1e-5 * norm);
    double clip = max_grad_norm > 0 && norm > max_grad_norm ? max_grad_norm / (norm + 1e-6) : 1.0;
    size_t o = 1;
    for (const auto& p : params) {
      std::vector<double> g(grad[p.name].begin(), grad[p.name].end());
      for (double& x : g) x *= clip;
      ref.update(ref_value[p.name], g, ref_slots[p.name], lr, step, h);
      const Tensor& new_value = (*out)[o++];
      for (size_t i = 0; i < value[p.name].size(); ++i) {
        value[p.name][i] = new_value.data_as<float>()[i];
        double want = ref_value[p.name][i];
        ASSERT_NEAR(value[p.name][i], want, 2e-6 * std::max(1.0, std::abs(want))) << p.name << "[" << i << "] step " << step;
      }
      for (const auto& s : desc->slots) {
        const Tensor& t = (*out)[o++];
        std::copy_n(t.data_as<float>(), t.size(), slots[p.name][s.name].begin());
      }
    }
  }
}

TEST(Optimizers, SgdPlainMatchesReference) { check_optimizer("sgd", SgdReference(), {}); }
TEST(Optimizers, SgdMomentumWeightDecayMatchesReference) {
  check_optimizer("sgd", SgdReference(), {{"momentum", 0.9f}, {"weight_decay", 0.01f}});
}
TEST(Optimizers, SgdNesterovMatchesReference) {
  check_optimizer("sgd", SgdReference(), {{"momentum", 0.9f}, {"nesterov", 1.0f}});
}
TEST(Optimizers, AdamWMatchesReference) { check_optimizer("adamw", AdamWReference(), {}); }
TEST(Optimizers, LambMatchesReference) { check_optimizer("lamb", LambReference(), {}); }
TEST(Optimizers, GlobalNormClippingScalesEveryGradient) {
  // The random gradients' norm is about 3; clip at 0.5 so that it acts every step.
  check_optimizer("sgd", SgdReference(), {{"momentum", 0.9f}}, 0.5f);
}

TEST(Optimizers, UnknownOptimizerNamesTheFoldersSearched) {
  auto desc = load_optimizer_plugin("adagradx", {ONYX_OPTIMIZER_DIR});
  ASSERT_FALSE(desc.ok());
  EXPECT_EQ(desc.status().code(), ONYX_STATUS_NOT_FOUND);
  EXPECT_NE(desc.status().message().find("libonyx_optimizer_adagradx.so"), std::string::npos);
  EXPECT_NE(desc.status().message().find(ONYX_OPTIMIZER_DIR), std::string::npos);
}

TEST(Optimizers, ANonOptimizerLibraryIsRefused) {
  auto desc = load_optimizer_plugin(std::string(ONYX_PROVIDER_DIR) + "/libonyx_provider_cpu.so");
  ASSERT_FALSE(desc.ok());
  EXPECT_EQ(desc.status().code(), ONYX_STATUS_INCOMPATIBLE);
  EXPECT_NE(desc.status().message().find("not an Onyx optimizer plugin"), std::string::npos);
}

std::string broken_optimizer(const std::string& variant) {
  return std::string(ONYX_TEST_PLUGIN_DIR) + "/libonyx_optimizer_" + variant + ".so";
}

TEST(Optimizers, AnEntryWithAnotherKindsMagicIsRefused) {
  auto desc = load_optimizer_plugin(broken_optimizer("wrong_magic"));
  ASSERT_FALSE(desc.ok());
  EXPECT_EQ(desc.status().code(), ONYX_STATUS_INCOMPATIBLE);
  const std::string& m = desc.status().message();
  EXPECT_NE(m.find("libonyx_optimizer_wrong_magic.so is not an Onyx optimizer plugin"), std::string::npos) << m;
  EXPECT_NE(m.find("entry magic 0x584E594F, expected 0x54504F4F"), std::string::npos) << m;
}

TEST(Optimizers, ATruncatedEntryIsRefusedNamingBothSizes) {
  auto desc = load_optimizer_plugin(broken_optimizer("truncated"));
  ASSERT_FALSE(desc.ok());
  EXPECT_EQ(desc.status().code(), ONYX_STATUS_INCOMPATIBLE);
  const std::string& m = desc.status().message();
  EXPECT_NE(m.find("libonyx_optimizer_truncated.so: optimizer entry is truncated"), std::string::npos) << m;
  EXPECT_NE(m.find("struct_size " + std::to_string(offsetof(OnyxOptimizerEntry, update_function))),
            std::string::npos) << m;
  EXPECT_NE(m.find(std::to_string(ONYX_OPTIMIZER_ENTRY_SIZE_1_0) + " bytes"), std::string::npos) << m;
}

TEST(Optimizers, AnotherMajorVersionIsRefusedNamingBothRanges) {
  auto desc = load_optimizer_plugin(broken_optimizer("major_two"));
  ASSERT_FALSE(desc.ok());
  EXPECT_EQ(desc.status().code(), ONYX_STATUS_INCOMPATIBLE);
  const std::string& m = desc.status().message();
  EXPECT_NE(m.find("optimizer 'major_two'"), std::string::npos) << m;
  EXPECT_NE(m.find("speaks optimizer ABI 2.0 to 2.1, but this Onyx host speaks 1.0"), std::string::npos) << m;
}

// bad-inputs.md, class 6: a slot count past its array (2^40 for one) was
// read element by element until it faulted; counts are bounded first.
TEST(Optimizers, ASlotCountPastItsArrayIsRefused) {
  auto desc = load_optimizer_plugin(broken_optimizer("slot_count"));
  ASSERT_FALSE(desc.ok());
  EXPECT_EQ(desc.status().code(), ONYX_STATUS_INCOMPATIBLE);
  const std::string& m = desc.status().message();
  EXPECT_NE(m.find("declares 1099511627776 slots"), std::string::npos) << m;
}

TEST(Optimizers, ANameThatIsNotPlainIsRefused) {
  auto desc = load_optimizer_plugin("adam w", {ONYX_OPTIMIZER_DIR});
  ASSERT_FALSE(desc.ok());
  EXPECT_EQ(desc.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
}

TEST(Optimizers, NonFloatParametersAreRefusedByName) {
  auto desc = load_optimizer_plugin("adamw", {ONYX_OPTIMIZER_DIR});
  ASSERT_TRUE(desc.ok());
  auto proto = build_optimizer_model(*desc, {{"steps", ONYX_DTYPE_INT64, {1}}});
  ASSERT_FALSE(proto.ok());
  EXPECT_NE(proto.status().message().find("'steps'"), std::string::npos);
}

// bad-inputs.md class 6: an update function calling an op that does not
// exist passed `onyx artifacts` and failed at the first step. It is refused
// when the optimizer model is built, naming the op.
TEST(Optimizers, AnUpdateFunctionCallingANonexistentOpIsRefused) {
  auto desc = load_optimizer_plugin("adamw", {ONYX_OPTIMIZER_DIR});
  ASSERT_TRUE(desc.ok()) << desc.status().to_string();
  OptimizerDescription broken = *desc;
  const size_t at = broken.update_function.find("Sqrt");
  ASSERT_NE(at, std::string::npos);
  broken.update_function.replace(at, 4, "NoSuchOp");
  auto proto = build_optimizer_model(broken, {{"w", ONYX_DTYPE_FLOAT32, {2}}});
  ASSERT_FALSE(proto.ok());
  EXPECT_EQ(proto.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(proto.status().message().find("op NoSuchOp is not an ai.onnx opset 17 operator"), std::string::npos)
      << proto.status().message();
}

}  // namespace
}  // namespace onyx::runtime::training
