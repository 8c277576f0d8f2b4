// Seconds the worker spends per phase (init, load, gate, timing) and per kind of work inside
// them (new inputs and GPU checks of timed samples, hashing inputs, reading outputs back, writing
// output files; GPU work counts where the worker waits for it). The
// worker reports them in its `done` event; the parent puts them in the record's `phases`, so a
// slow or contended evaluation can be pinned on what stretched instead of guessed at.
#pragma once
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace evo {

inline std::map<std::string, double>& worker_clock_totals() {
  static std::map<std::string, double> totals;  // one worker process, one thread
  return totals;
}

// Runs f, adds its wall time to `what`, returns what f returns.
template <typename F>
auto timed(const char* what, F&& f) {
  struct Add {
    const char* what;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~Add() {
      worker_clock_totals()[what] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  } add{what};
  return std::forward<F>(f)();
}

inline nlohmann::json worker_clock_json() {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, s] : worker_clock_totals()) j[k + "_s"] = s;
  return j;
}

}  // namespace evo
