// --devices (selection, mixed models, the per-GPU queue and a GPU failing mid-run) and --shard
// (parsing, the Slurm variables, the partition), without a GPU: the device list is made up.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/errors.h"
#include "core/shard.h"
#include "gpu/device_select.h"
#include "run/device_pool.h"
#include "support/test_support.h"

namespace evo {
namespace {

GpuInfo gpu(int index, const std::string& name) {
  GpuInfo g;
  g.index = index;
  g.name = name;
  g.uuid = "GPU-fake-" + std::to_string(index);
  return g;
}

TEST(Devices, AllAndListsSelectInTheOrderNamed) {
  const std::vector<GpuInfo> host{gpu(0, "NVIDIA H200"), gpu(1, "NVIDIA H200")};
  EXPECT_EQ(select_devices("all", host).size(), 2u);
  const auto picked = select_devices("1,0", host);
  ASSERT_EQ(picked.size(), 2u);
  EXPECT_EQ(picked[0].index, 1);
  EXPECT_EQ(picked[1].uuid, "GPU-fake-0");
  EXPECT_EQ(select_devices("1", host).front().index, 1);
}

TEST(Devices, AnIndexTheHostLacksIsAUsageErrorNamingTheRange) {
  const std::vector<GpuInfo> host{gpu(0, "NVIDIA H200"), gpu(1, "NVIDIA H200")};
  std::string msg;
  EXPECT_EQ(test::exit_code_of([&] { select_devices("7", host); }, &msg), kExitUsage);
  EXPECT_NE(msg.find("no CUDA device 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0-1"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
}

TEST(Devices, MixedModelsAreRefusedWithOneLine) {
  const std::vector<GpuInfo> host{gpu(0, "NVIDIA H200"), gpu(1, "NVIDIA H100 80GB HBM3"), gpu(2, "NVIDIA H200")};
  std::string msg;
  EXPECT_EQ(test::exit_code_of([&] { select_devices("all", host); }, &msg), kExitUsage);
  EXPECT_NE(msg.find("mixes GPU models"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NVIDIA H200 on 0,2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NVIDIA H100 80GB HBM3 on 1"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(select_devices("0,2", host).size(), 2u);  // one model: accepted
}

TEST(Devices, BadSyntaxAndRepeatsAreUsageErrorsAndNoGpuIsEnvironment) {
  for (const char* bad : {"", "0,", ",1", "a", "-1", "0;1", "1,1", "all,0"})
    EXPECT_EQ(test::exit_code_of([&] { parse_device_spec(bad); }), kExitUsage) << bad;
  EXPECT_EQ(test::exit_code_of([&] { select_devices("all", {}); }), kExitEnvironment);
}

TEST(Shard, ParsesIndexOfCountAndRefusesTheRest) {
  const Shard s = parse_shard("2/4");
  EXPECT_EQ(s.index, 2u);
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.text(), "2/4");
  std::string msg;
  EXPECT_EQ(test::exit_code_of([&] { parse_shard("3/2"); }, &msg), kExitUsage);
  EXPECT_NE(msg.find("below the count"), std::string::npos) << msg;
  for (const char* bad : {"2", "0/0", "a/2", "-1/2", "1/", "/2", "1/2/3", "1.0/2"})
    EXPECT_EQ(test::exit_code_of([&] { parse_shard(bad); }), kExitUsage) << bad;
}

TEST(Shard, SlurmArrayVariablesAreReadWhenPresent) {
  std::map<std::string, std::string> env;
  auto lookup = [&](const char* k) { return env.count(k) ? env.at(k).c_str() : nullptr; };
  EXPECT_FALSE(resolve_shard("", lookup).active());
  env = {{"SLURM_ARRAY_TASK_ID", "5"}, {"SLURM_ARRAY_TASK_COUNT", "3"}, {"SLURM_ARRAY_TASK_MIN", "4"}};
  const Shard s = resolve_shard("", lookup);
  EXPECT_EQ(s.text(), "1/3");
  EXPECT_EQ(s.source, "SLURM_ARRAY_TASK_ID");
  EXPECT_EQ(resolve_shard("0/1", lookup).count, 1u) << "--shard wins over the environment";
  env["SLURM_ARRAY_TASK_ID"] = "9";
  EXPECT_EQ(test::exit_code_of([&] { resolve_shard("", lookup); }), kExitEnvironment);
}

TEST(Shard, ShardsPartitionTheListExactlyAndEvenly) {
  std::vector<int> all(103);
  for (int i = 0; i < 103; ++i) all[size_t(i)] = i;
  std::multiset<int> seen;
  size_t smallest = all.size(), largest = 0;
  for (unsigned i = 0; i < 4; ++i) {
    const auto part = take_shard(all, Shard{i, 4, "--shard"});
    seen.insert(part.begin(), part.end());
    smallest = std::min(smallest, part.size());
    largest = std::max(largest, part.size());
  }
  EXPECT_EQ(seen, std::multiset<int>(all.begin(), all.end()));
  EXPECT_LE(largest - smallest, 1u);
}

TEST(DevicePool, EveryItemRunsOnceSpreadOverTheDevices) {
  std::mutex mu;
  std::multiset<size_t> done;
  std::set<size_t> slots_used;
  std::atomic<bool> started[2] = {false, false};
  const PoolReport r = run_device_pool(
      2, 40,
      [&](size_t slot, size_t item) {
        started[slot] = true;  // each GPU holds its first item until both have one: both work
        while (!started[0] || !started[1]) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::lock_guard lock(mu);
        done.insert(item);
        slots_used.insert(slot);
      },
      [](size_t, size_t, const std::string&) { FAIL() << "no device failed"; });
  EXPECT_EQ(done.size(), 40u);
  EXPECT_EQ(std::set<size_t>(done.begin(), done.end()).size(), 40u);
  EXPECT_EQ(slots_used.size(), 2u);
  EXPECT_EQ(r.items_per_device[0] + r.items_per_device[1], 40u);
  EXPECT_TRUE(r.not_run.empty());
}

TEST(DevicePool, AFailingGpuLosesOnlyItsInFlightItemAsCrash) {
  std::mutex mu;
  std::map<size_t, std::string> verdict;
  std::atomic<int> slot1_runs{0};
  std::atomic<bool> slot1_failed{false};
  const PoolReport r = run_device_pool(
      2, 30,
      [&](size_t slot, size_t item) {
        // GPU 0 holds its first item until GPU 1 has failed on its third: the split is fixed.
        while (slot == 0 && !slot1_failed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (slot == 1 && ++slot1_runs == 3) {
          slot1_failed = true;
          throw environment_error("CUDA_ERROR_ECC_UNCORRECTABLE");
        }
        std::lock_guard lock(mu);
        verdict[item] = "ok";
      },
      [&](size_t slot, size_t item, const std::string& why) {
        EXPECT_EQ(slot, 1u);
        EXPECT_NE(why.find("ECC"), std::string::npos);
        std::lock_guard lock(mu);
        verdict[item] = "crash";
      });
  ASSERT_EQ(verdict.size(), 30u) << "every item has a verdict: the run went on";
  int crashes = 0;
  for (const auto& [item, v] : verdict) crashes += v == "crash";
  EXPECT_EQ(crashes, 1);
  EXPECT_EQ(r.failed_devices.size(), 1u);
  EXPECT_EQ(r.items_per_device[1], 2u);
  EXPECT_EQ(r.items_per_device[0], 27u);
  EXPECT_TRUE(r.not_run.empty());
}

TEST(DevicePool, WhenEveryGpuFailsTheRestIsReportedNotRun) {
  const PoolReport r = run_device_pool(
      2, 10, [](size_t, size_t) { throw environment_error("gone"); }, [](size_t, size_t, const std::string&) {});
  EXPECT_EQ(r.failed_devices.size(), 2u);
  EXPECT_EQ(r.not_run.size(), 8u);
}

TEST(DevicePool, AnEvoBugStopsThePoolAndIsRethrown) {
  EXPECT_THROW(run_device_pool(
                   2, 10,
                   [](size_t, size_t item) {
                     if (item == 3) throw std::logic_error("bug");
                   },
                   [](size_t, size_t, const std::string&) {}),
               std::logic_error);
}

TEST(ShardCli, BadShardIsOneLineAndExit1) {
  const auto r = test::run_evo("compile --stage 0 --shard 3/2");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--shard 3/2: the index must be below the count"), std::string::npos) << r.out;
}

TEST(ShardCli, BadDevicesSyntaxIsExit1BeforeAnyWork) {
  const auto r = test::run_evo("run --stage 0 --devices 0,0");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("named twice"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace evo
