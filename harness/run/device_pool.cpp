#include "run/device_pool.h"

#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "core/errors.h"

namespace evo {

PoolReport run_device_pool(size_t slots, size_t items, const std::function<void(size_t, size_t)>& work,
                           const std::function<void(size_t, size_t, const std::string&)>& on_device_failure) {
  PoolReport report;
  report.items_per_device.assign(slots, 0);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::atomic<size_t> alive{slots};
  std::mutex mu;
  std::exception_ptr first_error;

  auto loop = [&](size_t slot) {
    while (!stop) {
      const size_t item = next++;
      if (item >= items) return;
      try {
        work(slot, item);
        std::lock_guard lock(mu);
        ++report.items_per_device[slot];
      } catch (const EvoError& e) {
        if (e.code() != kExitEnvironment) {
          std::lock_guard lock(mu);
          if (!first_error) first_error = std::current_exception();
          stop = true;
          return;
        }
        std::exception_ptr failed_recording;
        try {
          on_device_failure(slot, item, e.what());
        } catch (...) {
          failed_recording = std::current_exception();
        }
        std::lock_guard lock(mu);
        if (failed_recording && !first_error) first_error = failed_recording;
        report.failed_devices.push_back(fmt::format("device slot {}: {}", slot, e.what()));
        --alive;
        return;
      } catch (...) {
        std::lock_guard lock(mu);
        if (!first_error) first_error = std::current_exception();
        stop = true;
        return;
      }
    }
  };

  std::vector<std::thread> threads;
  for (size_t s = 0; s < slots; ++s) threads.emplace_back(loop, s);
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
  for (size_t item = next.load(); item < items && alive == 0; ++item) report.not_run.push_back(item);
  return report;
}

}  // namespace evo
