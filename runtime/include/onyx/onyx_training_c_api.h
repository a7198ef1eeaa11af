/*
 * onyx_training_c_api.h: the Onyx training API (C), part of libonyx.
 *
 * Objects: OnyxCheckpointState (parameters, optimizer state, property bag;
 * loaded from a checkpoint file; see onyx_checkpoint_c_api.h) ->
 * OnyxTrainingSession (the training, eval and optimizer models of
 * `onyx artifacts`, run against that state) ->
 * TrainStep / OptimizerStep / EvalStep; then save the state, or export an
 * inference model. The state lives apart from the session: it must outlive
 * every session created with it (the session keeps a reference and releases
 * it), and steps update it in place.
 *
 * Conventions are those of onyx_c_api.h: NULL status is success, a returned
 * status and every object created here belong to the caller (release them),
 * `out` parameters are written only on success, `const char*` results live
 * as long as the object they came from, `char**` results are freed with
 * onyx_string_release, and no C++ exception crosses this API.
 * Thread-safety: an OnyxCheckpointState or OnyxTrainingSession is not
 * synchronized: use each (and a state together with its sessions) from one
 * thread at a time. Distinct objects may be used from different threads.
 */
#ifndef ONYX_TRAINING_C_API_H_
#define ONYX_TRAINING_C_API_H_

#include <stdbool.h>

#include "onyx_c_api.h"
#include "onyx_checkpoint_c_api.h" /* OnyxCheckpointState: loading, saving, parameters */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct OnyxTrainingSession OnyxTrainingSession;

/* ---- artifacts ------------------------------------------------------------- */

/* Writes training.onnx, eval.onnx, optimizer.onnx and checkpoint.ckpt for
 * the forward model at `model_path` into `out_dir` (created if needed; each
 * file written atomically). Options are key/value strings (copied):
 *   "requires_grad" (repeatable): an initializer that gets a gradient
 *                    (default: every floating-point initializer not frozen)
 *   "frozen" (repeatable): an initializer kept as a parameter without gradient
 *   "loss": mse | l1 | crossentropy (default) | bcewithlogits | nll
 *   "reduction": mean (default) | sum;  "ignore_index": an integer
 *   "label_dtype": int64 (default) | int32;  "loss_output": a forward output
 *   "class_axis": 1 (default: scores [N, C, ...]) | -1 (scores [..., C], labels
 *                 [...], e.g. a language model's [batch, sequence, vocab])
 *   "optimizer": sgd | adamw (default) | lamb | a plugin path
 *   "optimizer_dir" (repeatable): a folder searched first for optimizer plugins
 *   "param_group" (repeatable): "REGEX:NAME=VALUE[,NAME=VALUE...]": parameters
 *                 whose names match REGEX (searched; the first matching group
 *                 wins) use these optimizer hyperparameters instead of the
 *                 session's, e.g. "(bias|norm\.weight)$:weight_decay=0"
 *   "precision": fp32 (default) | bf16 | fp16: mixed-precision training. The
 *                 training model computes MatMul, Gemm, Conv and ConvTranspose
 *                 in bfloat16 or float16 (casts inserted around them); every
 *                 other op, the loss, the parameters (master weights), their
 *                 gradients and the optimizer stay float32, and so do the eval
 *                 model and exported models. fp16 adds the input "loss_scale",
 *                 which the session feeds (dynamic loss scaling, below).
 *   "nominal": "1" writes a checkpoint without data (names, types, shapes)
 *   "forward_outputs": comma-separated forward outputs the training and eval
 *                 models return after "loss" ("" for none: the loss alone, as
 *                 ONNX Runtime's artifacts); default: every forward output
 * Errors name the parameter, op or option at fault. Thread-safe. */
ONYX_API OnyxStatus* onyx_training_generate_artifacts(const char* model_path, const char* const* keys,
                                                      const char* const* values, size_t count,
                                                      const char* out_dir);

/* Writes to `out_path` (atomically) a model of the vector-Jacobian products
 * of the model at `model_path`, for frameworks whose own autograd drives the
 * backward pass (onyx.torch.OnyxModule). Its inputs are the forward inputs,
 * then "<output>_grad" for each floating-point forward output (the upstream
 * gradient, same shape and type); its outputs are the forward outputs, then
 * "<name>_grad" for each of the `count` names in `wrt` (floating-point graph
 * inputs or initializers). Initializers must be inline (no external data).
 * Errors name the model and the value or op at fault. Thread-safe. */
ONYX_API OnyxStatus* onyx_training_build_gradient_model(const char* model_path, const char* const* wrt,
                                                        size_t count, const char* out_path);

/* ---- training session ------------------------------------------------------ */

/* Creates a session from model files. eval_path and optimizer_path may be
 * NULL (then EvalStep / OptimizerStep / export fail with a clear error).
 * `options` (may be NULL) chooses providers as for inference sessions; it is
 * not retained. Errors name the model and, for a checkpoint that does not fit
 * the models, the parameter with both shapes. */
ONYX_API OnyxStatus* onyx_training_session_create(OnyxEnv* env, OnyxCheckpointState* state,
                                                  const char* training_path, const char* eval_path,
                                                  const char* optimizer_path, const OnyxSessionOptions* options,
                                                  OnyxTrainingSession** out);
/* Same from serialized models in memory (copied; eval/optimizer may be NULL
 * with size 0). External data is refused. */
ONYX_API OnyxStatus* onyx_training_session_create_from_buffers(
    OnyxEnv* env, OnyxCheckpointState* state, const void* training, size_t training_size, const void* eval,
    size_t eval_size, const void* optimizer, size_t optimizer_size, const OnyxSessionOptions* options,
    OnyxTrainingSession** out);
ONYX_API void onyx_training_session_release(OnyxTrainingSession* session);

/* The data and label inputs, and the outputs ("loss" first, gradients not
 * included), of the training (eval = false) or eval model. Names are valid
 * while the session lives; NULL for an index out of range. */
ONYX_API size_t onyx_training_session_input_count(const OnyxTrainingSession* session, bool eval);
ONYX_API size_t onyx_training_session_output_count(const OnyxTrainingSession* session, bool eval);
ONYX_API const char* onyx_training_session_input_name(const OnyxTrainingSession* session, bool eval, size_t index);
ONYX_API const char* onyx_training_session_output_name(const OnyxTrainingSession* session, bool eval, size_t index);

/* The next TrainStep overwrites the gradients instead of adding to them. */
ONYX_API OnyxStatus* onyx_training_session_lazy_reset_grad(OnyxTrainingSession* session);
/* Runs forward and backward on one batch: inputs in input-name order;
 * outputs[k] receives a new tensor (caller releases) for output k;
 * output_count must equal onyx_training_session_output_count(session, false).
 * Gradients add up across steps until the next lazy reset. */
ONYX_API OnyxStatus* onyx_training_session_train_step(OnyxTrainingSession* session, const OnyxTensor* const* inputs,
                                                      size_t input_count, OnyxTensor** outputs, size_t output_count);
ONYX_API OnyxStatus* onyx_training_session_eval_step(OnyxTrainingSession* session, const OnyxTensor* const* inputs,
                                                     size_t input_count, OnyxTensor** outputs, size_t output_count);
/* One optimizer update from the accumulated gradients. */
ONYX_API OnyxStatus* onyx_training_session_optimizer_step(OnyxTrainingSession* session);

ONYX_API OnyxStatus* onyx_training_session_set_learning_rate(OnyxTrainingSession* session, double lr);
ONYX_API OnyxStatus* onyx_training_session_get_learning_rate(const OnyxTrainingSession* session, double* lr);
/* Registers a schedule, e.g. "cosine:warmup=100,total=5000" (constant,
 * linear, cosine, step; see docs/training.md) with its base rate; the
 * learning rate becomes the schedule's first value. */
ONYX_API OnyxStatus* onyx_training_session_set_lr_schedule(OnyxTrainingSession* session, const char* schedule,
                                                           double base_lr);
ONYX_API OnyxStatus* onyx_training_session_scheduler_step(OnyxTrainingSession* session);
/* An optimizer hyperparameter by name ("beta1", "momentum", ...). */
ONYX_API OnyxStatus* onyx_training_session_set_hyperparameter(OnyxTrainingSession* session, const char* name,
                                                              float value);
/* Gradient clipping by global norm; <= 0 turns it off (the default). */
ONYX_API OnyxStatus* onyx_training_session_set_max_grad_norm(OnyxTrainingSession* session, float max_norm);

/* fp16 dynamic loss scaling (sessions whose training model was made with
 * precision fp16; it takes the input "loss_scale", which the session feeds
 * itself). Each TrainStep's gradients come out multiplied by the scale;
 * OptimizerStep divides them by it before clipping and the update, or, when
 * any gradient is inf or NaN, skips the step (weights, optimizer state and
 * step count unchanged; the gradients are dropped) and halves the scale.
 * After `growth_interval` clean steps in a row the scale doubles. Defaults:
 * initial scale 65536, growth interval 2000. The scale and the clean-step
 * count are checkpoint properties ("onyx_loss_scale",
 * "onyx_loss_scale_clean_steps"), restored when a session is created.
 * set_loss_scaling restarts at `initial_scale` (finite, > 0) with no clean
 * steps counted; FAILED_PRECONDITION on a session that is not loss-scaled.
 * fp16 sessions cannot join a data-parallel job yet (UNIMPLEMENTED). */
ONYX_API OnyxStatus* onyx_training_session_set_loss_scaling(OnyxTrainingSession* session, double initial_scale,
                                                            int64_t growth_interval);
/* The scale the next TrainStep uses (1 when the session is not loss-scaled). */
ONYX_API OnyxStatus* onyx_training_session_get_loss_scale(const OnyxTrainingSession* session, double* scale);
/* Whether the last OptimizerStep was skipped (non-finite gradients under
 * loss scaling, or on any rank of a data-parallel job). */
ONYX_API OnyxStatus* onyx_training_session_last_step_skipped(const OnyxTrainingSession* session, bool* skipped);

/* Element and byte counts of all (or only trainable) parameters. The flat
 * buffer holds every parameter's bytes in checkpoint order, packed, each in
 * its own dtype: any mix of types, not float only. */
ONYX_API OnyxStatus* onyx_training_session_parameters_size(const OnyxTrainingSession* session, bool trainable_only,
                                                           size_t* elements, size_t* bytes);
ONYX_API OnyxStatus* onyx_training_session_copy_parameters_to_buffer(const OnyxTrainingSession* session,
                                                                     void* buffer, size_t bytes,
                                                                     bool trainable_only);
/* Also how a nominal checkpoint gets its weights. */
ONYX_API OnyxStatus* onyx_training_session_copy_buffer_to_parameters(OnyxTrainingSession* session,
                                                                     const void* buffer, size_t bytes,
                                                                     bool trainable_only);
/* Writes an inference model (the eval graph cut to `output_names`, all
 * forward outputs when count is 0) with the current parameters as
 * initializers, atomically. Parameters totalling 1 GiB or more go to the
 * side file "<file name>.data" (so models over 2 GB export). */
ONYX_API OnyxStatus* onyx_training_session_export_model(const OnyxTrainingSession* session, const char* path,
                                                        const char* const* output_names, size_t count);
/* Seeds the session's random number use (recorded; see docs/training.md). */
ONYX_API OnyxStatus* onyx_training_session_set_seed(OnyxTrainingSession* session, uint64_t seed);

/* ---- data-parallel training (docs/distributed.md) -------------------------- */

/* One process's place in a data-parallel job, joined through a collectives
 * plugin: "mpi" (started by mpirun), "nccl", "loopback" (a job of one), or a
 * plugin path. Plugins are found as libonyx_collectives_<name>.so in
 * ONYX_COLLECTIVES_PATH, beside the executable and in
 * <exe>/../lib/onyx/collectives. Every collective the job runs is bounded by
 * `timeout_seconds` (<= 0: 60 s): a rank that died or stopped ends the job
 * with an error naming the collective, instead of a hang.
 * Ownership: the caller releases the job; a session that joined it keeps
 * the connection alive until it is released too (any order). A process
 * joins at most one job per plugin. Not thread-safe: use the job and its
 * sessions from one thread at a time. */
typedef struct OnyxDistributedJob OnyxDistributedJob;
ONYX_API OnyxStatus* onyx_distributed_job_join(const char* collectives, double timeout_seconds,
                                               OnyxDistributedJob** out);
ONYX_API void onyx_distributed_job_release(OnyxDistributedJob* job);
/* This process's rank in [0, size) and the job's size; -1 for NULL. */
ONYX_API int32_t onyx_distributed_job_rank(const OnyxDistributedJob* job);
ONYX_API int32_t onyx_distributed_job_size(const OnyxDistributedJob* job);
/* values[i] = the sum over the ranks of every rank's values[i] (metrics such
 * as a loss; every rank calls it with the same count). */
ONYX_API OnyxStatus* onyx_distributed_job_sum(OnyxDistributedJob* job, double* values, size_t count);
/* The collectives this process ran so far, as text: "all_reduce 3 calls 24 B,
 * reduce_scatter ...". Free with onyx_string_release. */
ONYX_API OnyxStatus* onyx_distributed_job_counters(const OnyxDistributedJob* job, char** text);

/* Makes the session one rank of `job`. Every
 * rank calls it; it fails on every rank when the ranks hold different
 * parameters or optimizers. Then each rank trains on its own part of every
 * global batch, and optimizer_step averages the gradients over the ranks.
 * Options (key/value strings, copied):
 *   "zero_stage": 0 (default: every rank holds the whole optimizer state) or
 *                 1 (ZeRO stage 1: the state is sharded over the ranks)
 *   "bucket_bytes": the largest gradient collective (default 26214400; 0: one)
 *   "optimizer_dir" (repeatable): folders searched first for the optimizer
 *                 plugin, which ZeRO stage 1 loads */
ONYX_API OnyxStatus* onyx_training_session_join(OnyxTrainingSession* session, OnyxDistributedJob* job,
                                                const char* const* keys, const char* const* values, size_t count);
/* Under ZeRO stage 1 the optimizer state lives in shards: this collective
 * (every rank calls it) puts the whole state back into the checkpoint state,
 * which is then saved as usual. Does nothing otherwise. */
ONYX_API OnyxStatus* onyx_training_session_gather_optimizer_state(OnyxTrainingSession* session);
/* Writes this rank's shard of the checkpoint state to `path` (atomically):
 * what onyx_checkpoint_shard would cut from the complete state for the job's
 * world size, made from the rank's own state (under ZeRO stage 1 its
 * optimizer shard: nothing is gathered). Every rank writes its own; the
 * shards of any world size aggregate (onyx_checkpoint_aggregate) into the
 * complete state. Fails on a session that has not joined a job. */
ONYX_API OnyxStatus* onyx_training_session_save_checkpoint_shard(const OnyxTrainingSession* session, const char* path);
/* Gradients accumulated over several TrainSteps are summed (default); with
 * `mean` true the optimizer sees their mean, so that K micro-batches of B
 * give the update of one batch of K*B. */
ONYX_API OnyxStatus* onyx_training_session_set_gradient_accumulation_mean(OnyxTrainingSession* session, bool mean);
/* The weight (finite, > 0; default 1) of the next TrainStep's gradients in
 * that mean: the optimizer sees sum(w g) / sum(w). Give each micro-batch its
 * count of labelled tokens, and micro-batches whose loss is a mean over
 * their tokens add up to the gradient of the whole batch's token mean. Applies
 * to one TrainStep, then returns to 1. Not thread-safe with other calls on
 * the same session. */
ONYX_API OnyxStatus* onyx_training_session_set_step_weight(OnyxTrainingSession* session, double weight);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONYX_TRAINING_C_API_H_ */
