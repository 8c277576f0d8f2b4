// NVML (libnvidia-ml.so.1), loaded at run time, for SM clocks before and after measurements.
#pragma once
#include <optional>
#include <string>

namespace evo {

// Current SM clock of the device with this PCI bus id or index, in MHz; nullopt without NVML.
std::optional<unsigned> nvml_sm_clock_mhz(int device_index);
std::optional<unsigned> nvml_max_sm_clock_mhz(int device_index);
bool nvml_available();

}  // namespace evo
