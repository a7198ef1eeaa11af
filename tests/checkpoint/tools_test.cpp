// tools_test.cpp: nominal checkpoints, diff, and ZeRO-1 sharding: shards
// for world size 2 and 4 aggregate to the unsharded checkpoint, weights-only
// aggregation, resharding 4 -> 2 -> 1, and refusals that name the problem.
#include <gtest/gtest.h>

#include "checkpoint_test_util.h"
#include "onyx/checkpoint_tools.h"

namespace onyx::checkpoint {
namespace {

using testing::TempDir;

// Parameters large enough to cross rank boundaries, with AdamW-style state
// (and a scalar state that stays whole), plus the sample's odd dtypes.
Checkpoint training_checkpoint() {
  Checkpoint c = testing::sample_checkpoint(3);
  c.module.trainable.insert(c.module.trainable.begin(),
                            testing::random_tensor("conv.weight", ONYX_DTYPE_FLOAT32, {17, 3, 5, 5}, 101));
  c.module.trainable.push_back(testing::random_tensor("packed.trainable", ONYX_DTYPE_INT4, {9}, 102));
  ParameterState conv{"conv.weight", {}};
  conv.tensors.push_back(testing::random_tensor("momentum1", ONYX_DTYPE_FLOAT32, {17, 3, 5, 5}, 103));
  conv.tensors.push_back(testing::random_tensor("momentum2", ONYX_DTYPE_FLOAT32, {17, 3, 5, 5}, 104));
  conv.tensors.push_back(testing::random_tensor("scale", ONYX_DTYPE_FLOAT32, {1}, 105));
  c.optimizer[0].parameters.push_back(std::move(conv));
  return c;
}

TEST(CheckpointTools, NominalKeepsTheSchemaAndDropsAllData) {
  TempDir dir;
  Checkpoint c = testing::sample_checkpoint();
  Checkpoint nominal = make_nominal(c);
  EXPECT_TRUE(nominal.nominal());
  ASSERT_TRUE(save(nominal, dir / "n.ckpt").ok());
  ASSERT_TRUE(save(c, dir / "c.ckpt").ok());
  StatusOr<Checkpoint> loaded = load(dir / "n.ckpt");
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_TRUE(loaded->nominal());
  testing::expect_same(nominal, *loaded);
  EXPECT_LT(std::filesystem::file_size(dir / "n.ckpt"), std::filesystem::file_size(dir / "c.ckpt"));
  // The schema matches the complete one's: only data differs.
  for (const std::string& line : diff(c, *loaded)) EXPECT_NE(line.find("data only in the first"), std::string::npos) << line;
}

TEST(CheckpointTools, DiffFindsEveryKindOfDifference) {
  Checkpoint a = testing::sample_checkpoint();
  EXPECT_TRUE(diff(a, a).empty());
  Checkpoint b = testing::sample_checkpoint();
  b.module.trainable[0].data = b.module.trainable[0].data.clone();
  b.module.trainable[0].data.data_as<uint32_t>()[3] ^= 1u;
  b.optimizer[1].step += 1;
  b.properties["epoch"] = int64_t(8);
  b.properties.erase("note");
  b.module.frozen.pop_back();
  std::vector<std::string> lines = diff(a, b);
  auto has = [&](const std::string& text) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  EXPECT_EQ(lines.size(), 5u);
  EXPECT_TRUE(has("trainable parameter 'fc1.weight': 1 of 192 elements differ"));
  EXPECT_TRUE(has("optimizer group 'no_decay': step -1 vs 0"));
  EXPECT_TRUE(has("property 'epoch': 7 (int64) vs 8 (int64)"));
  EXPECT_TRUE(has("property 'note': only in the first"));
  EXPECT_TRUE(has("frozen parameter 'empty': only in the first"));
}

TEST(CheckpointTools, ShardsForTwoAndFourRanksAggregateToTheOriginal) {
  Checkpoint c = training_checkpoint();
  for (uint32_t world : {2u, 4u}) {
    SCOPED_TRACE("world size " + std::to_string(world));
    StatusOr<std::vector<Checkpoint>> shards = shard(c, world);
    ASSERT_TRUE(shards.ok()) << shards.status().to_string();
    ASSERT_EQ(shards->size(), world);
    int64_t sliced_elements = 0;
    for (uint32_t r = 0; r < world; ++r) {
      const Checkpoint& s = (*shards)[r];
      EXPECT_EQ(s.metadata.shard_index, r);
      EXPECT_EQ(s.metadata.shard_count, world);
      for (const TensorRecord& t : s.module.trainable)
        if (t.slice) sliced_elements += t.shape[0];
      EXPECT_TRUE(validate(s).ok()) << validate(s).to_string();
    }
    EXPECT_EQ(sliced_elements, 17 * 3 * 25 + 16 * 12 + 16 + 105 + 33 + 1);  // every sliceable element once

    // Through files, in reverse order: aggregation sorts by rank.
    TempDir dir;
    std::vector<Checkpoint> loaded;
    for (uint32_t r = world; r-- > 0;) {
      auto path = dir / ("s" + std::to_string(r));
      ASSERT_TRUE(save((*shards)[r], path).ok());
      StatusOr<Checkpoint> l = load(path);
      ASSERT_TRUE(l.ok()) << l.status().to_string();
      loaded.push_back(std::move(*l));
    }
    StatusOr<Checkpoint> merged = aggregate(loaded);
    ASSERT_TRUE(merged.ok()) << merged.status().to_string();
    testing::expect_same(c, *merged);
    EXPECT_TRUE(diff(c, *merged).empty());
  }
}

TEST(CheckpointTools, RanksHoldEqualAlignedPieces) {
  Checkpoint c;
  c.module.trainable.push_back(testing::random_tensor("w", ONYX_DTYPE_FLOAT32, {1000}, 1));
  StatusOr<std::vector<Checkpoint>> shards = shard(c, 4);
  ASSERT_TRUE(shards.ok());
  // 1000 elements over 4 ranks: pieces of 256 (a multiple of 32), the last shorter.
  std::vector<int64_t> sizes, offsets;
  for (const Checkpoint& s : *shards) {
    sizes.push_back(s.module.trainable.at(0).shape[0]);
    offsets.push_back(s.module.trainable[0].slice->offset);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{256, 256, 256, 232}));
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 256, 512, 768}));
}

TEST(CheckpointTools, WeightsOnlyAggregation) {
  Checkpoint c = training_checkpoint();
  Checkpoint weights = c;
  weights.optimizer.clear();
  // Shards written without optimizer state.
  StatusOr<std::vector<Checkpoint>> shards = shard(weights, 4);
  ASSERT_TRUE(shards.ok());
  StatusOr<Checkpoint> merged = aggregate(*shards);
  ASSERT_TRUE(merged.ok()) << merged.status().to_string();
  testing::expect_same(weights, *merged);
  // Shards with optimizer state, asked for weights only.
  shards = shard(c, 4);
  ASSERT_TRUE(shards.ok());
  merged = aggregate(*shards, {.weights_only = true});
  ASSERT_TRUE(merged.ok()) << merged.status().to_string();
  testing::expect_same(weights, *merged);
}

TEST(CheckpointTools, Reshard4To2To1RoundTripsExactly) {
  Checkpoint c = training_checkpoint();
  StatusOr<std::vector<Checkpoint>> four = shard(c, 4);
  ASSERT_TRUE(four.ok());
  StatusOr<Checkpoint> from_four = aggregate(*four);
  ASSERT_TRUE(from_four.ok());
  StatusOr<std::vector<Checkpoint>> two = shard(*from_four, 2);
  ASSERT_TRUE(two.ok());
  StatusOr<Checkpoint> from_two = aggregate(*two);
  ASSERT_TRUE(from_two.ok());
  StatusOr<std::vector<Checkpoint>> one = shard(*from_two, 1);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  testing::expect_same(c, (*one)[0]);
  StatusOr<Checkpoint> from_one = aggregate(*one);
  ASSERT_TRUE(from_one.ok());
  testing::expect_same(c, *from_one);
}

TEST(CheckpointTools, NominalShardsAggregateToTheNominalCheckpoint) {
  Checkpoint nominal = make_nominal(training_checkpoint());
  StatusOr<std::vector<Checkpoint>> shards = shard(nominal, 2);
  ASSERT_TRUE(shards.ok());
  StatusOr<Checkpoint> merged = aggregate(*shards);
  ASSERT_TRUE(merged.ok()) << merged.status().to_string();
  EXPECT_TRUE(merged->nominal());
  testing::expect_same(nominal, *merged);
}

Status aggregate_error(std::vector<Checkpoint> shards) { return aggregate(shards).status(); }

void expect_message(const Status& status, const std::string& text) {
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(text), std::string::npos) << status.message();
}

TEST(CheckpointTools, AggregationRefusesInconsistentShards) {
  Checkpoint c = training_checkpoint();
  std::vector<Checkpoint> shards = shard(c, 4).value();

  expect_message(aggregate_error({shards[0], shards[1], shards[3]}), "rank 2 of 4 is missing");
  expect_message(aggregate_error({shards[0], shards[1], shards[1], shards[3]}), "rank 1 is given twice");

  std::vector<Checkpoint> bad = shards;
  bad[2].module.frozen[0].data = bad[2].module.frozen[0].data.clone();
  bad[2].module.frozen[0].data.data_as<int64_t>()[0] ^= 1;
  expect_message(aggregate_error(bad), "frozen parameter 'embedding.ids' is unsharded but its values differ between rank 0 and rank 2");

  bad = shards;
  bad[3].optimizer[0].step = 99;
  expect_message(aggregate_error(bad), "optimizer group 'default': step 1234 in rank 0 but 99 in rank 3");

  bad = shards;
  bad[1].optimizer.clear();
  expect_message(aggregate_error(bad), "aggregate weights only");

  bad = shards;
  bad[1].properties["epoch"] = int64_t(0);
  expect_message(aggregate_error(bad), "property 'epoch' differs between rank 0 and rank 1");

  bad = shards;
  bad[1].metadata.model_identity = "another model";
  expect_message(aggregate_error(bad), "model identity differs");

  // A rank whose slice starts in the wrong place (shards of another world size mixed in).
  bad = shards;
  bad[1].module.trainable[0].slice->offset += 32;
  expect_message(aggregate_error(bad), "trainable parameter 'conv.weight' in rank 1 starts at element");

  expect_message(shard(shards[0], 2).status(), "aggregate the shards first");
  expect_message(shard(c, 0).status(), "world size must be at least 1");
}

// bad-inputs.md class 3: slices of a [2^30] tensor that cover 10 elements made
// aggregate allocate the whole tensor (4 GiB, 13 s) before finding the gap.
// The tiling is checked first; here the full tensor would be 4 TiB.
TEST(CheckpointTools, AggregationChecksTheSlicesBeforeAllocatingTheTensor) {
  std::vector<Checkpoint> shards = shard(training_checkpoint(), 2).value();
  for (Checkpoint& s : shards) s.module.trainable[0].slice->full_shape = {int64_t(1) << 40};
  expect_message(aggregate_error(shards),
                 "trainable parameter 'conv.weight': the slices cover 1275 of its 1099511627776 elements");
}

}  // namespace
}  // namespace onyx::checkpoint
