// One worker thread per GPU pulling candidates from one queue (`--devices`). Compiles happen
// before, on the thread pool; here each thread only drives its GPU's isolated worker processes,
// so two GPUs evaluate two candidates at once. A GPU that fails (an environment error from its
// worker: the device fell off the bus, cuInit fails) costs the candidate in flight on it its
// verdict (recorded as `crash` by `on_device_failure`); that GPU takes no more candidates and the
// others finish the queue. Only if every GPU has failed does the run stop with work left.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace evo {

struct PoolReport {
  std::vector<size_t> not_run;              // items left when every device had failed
  std::vector<std::string> failed_devices;  // "device 1: <why>"
  std::vector<size_t> items_per_device;     // how many items each slot finished
};

// `work(slot, item)` evaluates item on device slot `slot`; it may throw. An EvoError with the
// environment exit code retires the slot after `on_device_failure(slot, item, what)` has been
// called for the item it was running; any other exception stops the pool and is rethrown here
// once every thread has finished its current item.
PoolReport run_device_pool(size_t slots, size_t items, const std::function<void(size_t, size_t)>& work,
                           const std::function<void(size_t, size_t, const std::string&)>& on_device_failure);

}  // namespace evo
