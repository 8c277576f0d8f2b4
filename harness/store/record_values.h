// The values a record's numbers may take. A time or a fitness that is negative, not finite, or a
// string would be ranked, merged, shown in COMPARE.md and exported as if measured, so the one
// record reader (store/typed_record.cpp) refuses the line instead, naming the field.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace evo {

// Empty when every timing, fitness, phase and GPU-seconds value in `record` is possible (absent,
// null, or a finite number in range); else what is wrong, e.g. "field 'fitness.geomean_median_us'
// is -5: a time must be a finite number > 0".
std::string record_values_error(const nlohmann::json& record);

}  // namespace evo
