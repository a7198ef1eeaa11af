// rules_loss.cpp: gradients of the ai.onyx loss ops (kernels in
// providers/cpu/kernels/grad/loss_grad.cpp).
#include "autodiff/rules.h"

namespace onyx::runtime::autodiff {

void add_loss_rules(RuleTable& t) {
  // NegativeLogLikelihoodLoss(log_prob, labels) -> loss; the gradient op
  // (dloss, labels, shape of log_prob) re-reads the labels and the
  // attributes (reduction, ignore_index).
  t[std::string(kOnyxDomain) + "::NegativeLogLikelihoodLoss"] = [](GradContext& c) {
    c.set_dx(0, c.e().op("NegativeLogLikelihoodLossGrad", {c.dy(0), c.x(1), c.e().op("Shape", {c.x(0)})},
                         c.attrs({"reduction", "ignore_index"}), kOnyxDomain));
    return Status();
  };
}

}  // namespace onyx::runtime::autodiff
