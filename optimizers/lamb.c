/* lamb.c: LAMB (You et al., "Large Batch Optimization for Deep Learning"):
 * Adam moments with bias correction, then a layer-wise trust ratio:
 *   r <- m_hat / (sqrt(v_hat) + epsilon) + weight_decay * param
 *   trust <- ||param|| / ||r|| when both norms are > 0, else 1
 *   param <- param - lr * trust * r */
#include <onyx_optimizer.h>

static const OnyxOptimizerSlot kSlots[] = {
    {sizeof(OnyxOptimizerSlot), "m", 0.0f},
    {sizeof(OnyxOptimizerSlot), "v", 0.0f},
};

static const OnyxOptimizerHyperparameter kHyperparameters[] = {
    {sizeof(OnyxOptimizerHyperparameter), "beta1", 0.9f, "decay of the first-moment average"},
    {sizeof(OnyxOptimizerHyperparameter), "beta2", 0.999f, "decay of the second-moment average"},
    {sizeof(OnyxOptimizerHyperparameter), "epsilon", 1e-6f, "added to the denominator for stability"},
    {sizeof(OnyxOptimizerHyperparameter), "weight_decay", 0.01f, "weight decay inside the trust ratio"},
};

static const char kUpdate[] =
    "<domain: \"ai.onyx.optimizers\", opset_import: [\"\" : 17]>\n"
    "LAMB (param, grad, m, v, lr, step, beta1, beta2, epsilon, weight_decay)"
    " => (new_param, new_m, new_v)\n"
    "{\n"
    "  one = Constant <value_float = 1.0> ()\n"
    "  zero = Constant <value_float = 0.0> ()\n"
    "  one_minus_beta1 = Sub (one, beta1)\n"
    "  m_old = Mul (beta1, m)\n"
    "  m_grad = Mul (one_minus_beta1, grad)\n"
    "  new_m = Add (m_old, m_grad)\n"
    "  one_minus_beta2 = Sub (one, beta2)\n"
    "  v_old = Mul (beta2, v)\n"
    "  grad_sq = Mul (grad, grad)\n"
    "  v_grad = Mul (one_minus_beta2, grad_sq)\n"
    "  new_v = Add (v_old, v_grad)\n"
    "  beta1_t = Pow (beta1, step)\n"
    "  beta2_t = Pow (beta2, step)\n"
    "  bias1 = Sub (one, beta1_t)\n"
    "  bias2 = Sub (one, beta2_t)\n"
    "  m_hat = Div (new_m, bias1)\n"
    "  v_hat = Div (new_v, bias2)\n"
    "  v_root = Sqrt (v_hat)\n"
    "  denom = Add (v_root, epsilon)\n"
    "  adam = Div (m_hat, denom)\n"
    "  decay = Mul (weight_decay, param)\n"
    "  r = Add (adam, decay)\n"
    "  param_sq = ReduceSumSquare <keepdims = 0> (param)\n"
    "  param_norm = Sqrt (param_sq)\n"
    "  r_sq = ReduceSumSquare <keepdims = 0> (r)\n"
    "  r_norm = Sqrt (r_sq)\n"
    "  param_pos = Greater (param_norm, zero)\n"
    "  r_pos = Greater (r_norm, zero)\n"
    "  both_pos = And (param_pos, r_pos)\n"
    "  ratio = Div (param_norm, r_norm)\n"
    "  trust = Where (both_pos, ratio, one)\n"
    "  scaled_lr = Mul (lr, trust)\n"
    "  delta = Mul (scaled_lr, r)\n"
    "  new_param = Sub (param, delta)\n"
    "}\n";

static const OnyxOptimizerEntry kEntry = {
    ONYX_OPTIMIZER_MAGIC,
    sizeof(OnyxOptimizerEntry),
    ONYX_OPTIMIZER_ABI_VERSION(1, 0),
    ONYX_OPTIMIZER_ABI_VERSION(ONYX_OPTIMIZER_ABI_VERSION_MAJOR, ONYX_OPTIMIZER_ABI_VERSION_MINOR),
    "lamb",
    "1.0.0",
    sizeof kSlots / sizeof kSlots[0],
    kSlots,
    sizeof kHyperparameters / sizeof kHyperparameters[0],
    kHyperparameters,
    kUpdate,
    "ai.onyx.optimizers",
    "LAMB",
};

ONYX_OPTIMIZER_EXPORT const OnyxOptimizerEntry* OnyxGetOptimizerEntry(void) { return &kEntry; }
