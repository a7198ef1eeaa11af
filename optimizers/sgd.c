/* sgd.c: stochastic gradient descent with momentum, Nesterov momentum and
 * (coupled, L2) weight decay, with PyTorch's semantics (dampening 0):
 *   g <- grad + weight_decay * param
 *   buf <- momentum * buf + g            (buf starts at 0, so step 1 gives g)
 *   d <- nesterov ? g + momentum * buf : buf
 *   param <- param - lr * d
 * nesterov is a float flag (0 or 1) so that one body covers both forms. */
#include <onyx_optimizer.h>

static const OnyxOptimizerSlot kSlots[] = {
    {sizeof(OnyxOptimizerSlot), "momentum_buffer", 0.0f},
};

static const OnyxOptimizerHyperparameter kHyperparameters[] = {
    {sizeof(OnyxOptimizerHyperparameter), "momentum", 0.0f, "momentum factor (0: plain SGD)"},
    {sizeof(OnyxOptimizerHyperparameter), "nesterov", 0.0f, "1: Nesterov momentum, 0: classical"},
    {sizeof(OnyxOptimizerHyperparameter), "weight_decay", 0.0f, "L2 penalty added to the gradient"},
};

static const char kUpdate[] =
    "<domain: \"ai.onyx.optimizers\", opset_import: [\"\" : 17]>\n"
    "SGD (param, grad, buf, lr, step, momentum, nesterov, weight_decay) => (new_param, new_buf)\n"
    "{\n"
    "  one = Constant <value_float = 1.0> ()\n"
    "  decay = Mul (weight_decay, param)\n"
    "  g = Add (grad, decay)\n"
    "  buf_old = Mul (momentum, buf)\n"
    "  new_buf = Add (buf_old, g)\n"
    "  look_ahead = Mul (momentum, new_buf)\n"
    "  nesterov_d = Add (g, look_ahead)\n"
    "  nesterov_part = Mul (nesterov, nesterov_d)\n"
    "  classic = Sub (one, nesterov)\n"
    "  classic_part = Mul (classic, new_buf)\n"
    "  direction = Add (nesterov_part, classic_part)\n"
    "  delta = Mul (lr, direction)\n"
    "  new_param = Sub (param, delta)\n"
    "}\n";

static const OnyxOptimizerEntry kEntry = {
    ONYX_OPTIMIZER_MAGIC,
    sizeof(OnyxOptimizerEntry),
    ONYX_OPTIMIZER_ABI_VERSION(1, 0),
    ONYX_OPTIMIZER_ABI_VERSION(ONYX_OPTIMIZER_ABI_VERSION_MAJOR, ONYX_OPTIMIZER_ABI_VERSION_MINOR),
    "sgd",
    "1.0.0",
    sizeof kSlots / sizeof kSlots[0],
    kSlots,
    sizeof kHyperparameters / sizeof kHyperparameters[0],
    kHyperparameters,
    kUpdate,
    "ai.onyx.optimizers",
    "SGD",
};

ONYX_OPTIMIZER_EXPORT const OnyxOptimizerEntry* OnyxGetOptimizerEntry(void) { return &kEntry; }
