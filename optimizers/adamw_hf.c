/* adamw_hf.c: AdamW as Hugging Face transformers' AdamW and ONNX Runtime
 * Training's artifacts (AdamWOptimizer, adam_mode 1) define it: epsilon is
 * added before the second moment's bias correction, weight decay after the
 * update, and the defaults are theirs (epsilon 1e-6, no weight decay):
 *   m <- beta1 m + (1 - beta1) g;  v <- beta2 v + (1 - beta2) g^2
 *   param <- param - lr * sqrt(1 - beta2^step) / (1 - beta1^step) * m / (sqrt(v) + epsilon)
 *   param <- param - lr * weight_decay * param
 * The `adamw` plugin has PyTorch's semantics; onyx.training.artifacts picks
 * this one for OptimType.AdamW so that ORT Training scripts train the same. */
#include <onyx_optimizer.h>

static const OnyxOptimizerSlot kSlots[] = {
    {sizeof(OnyxOptimizerSlot), "m", 0.0f},
    {sizeof(OnyxOptimizerSlot), "v", 0.0f},
};

static const OnyxOptimizerHyperparameter kHyperparameters[] = {
    {sizeof(OnyxOptimizerHyperparameter), "beta1", 0.9f, "decay of the first-moment average"},
    {sizeof(OnyxOptimizerHyperparameter), "beta2", 0.999f, "decay of the second-moment average"},
    {sizeof(OnyxOptimizerHyperparameter), "epsilon", 1e-6f, "added to sqrt(v) before bias correction"},
    {sizeof(OnyxOptimizerHyperparameter), "weight_decay", 0.0f, "decoupled weight decay, applied after the update"},
};

static const char kUpdate[] =
    "<domain: \"ai.onyx.optimizers\", opset_import: [\"\" : 17]>\n"
    "AdamWHF (param, grad, m, v, lr, step, beta1, beta2, epsilon, weight_decay)"
    " => (new_param, new_m, new_v)\n"
    "{\n"
    "  one = Constant <value_float = 1.0> ()\n"
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
    "  bias2_root = Sqrt (bias2)\n"
    "  lr_bias2 = Mul (lr, bias2_root)\n"
    "  step_size = Div (lr_bias2, bias1)\n"
    "  v_root = Sqrt (new_v)\n"
    "  denom = Add (v_root, epsilon)\n"
    "  direction = Div (new_m, denom)\n"
    "  delta = Mul (step_size, direction)\n"
    "  updated = Sub (param, delta)\n"
    "  decay = Mul (lr, weight_decay)\n"
    "  keep = Sub (one, decay)\n"
    "  new_param = Mul (updated, keep)\n"
    "}\n";

static const OnyxOptimizerEntry kEntry = {
    ONYX_OPTIMIZER_MAGIC,
    sizeof(OnyxOptimizerEntry),
    ONYX_OPTIMIZER_ABI_VERSION(1, 0),
    ONYX_OPTIMIZER_ABI_VERSION(ONYX_OPTIMIZER_ABI_VERSION_MAJOR, ONYX_OPTIMIZER_ABI_VERSION_MINOR),
    "adamw_hf",
    "1.0.0",
    sizeof kSlots / sizeof kSlots[0],
    kSlots,
    sizeof kHyperparameters / sizeof kHyperparameters[0],
    kHyperparameters,
    kUpdate,
    "ai.onyx.optimizers",
    "AdamWHF",
};

ONYX_OPTIMIZER_EXPORT const OnyxOptimizerEntry* OnyxGetOptimizerEntry(void) { return &kEntry; }
