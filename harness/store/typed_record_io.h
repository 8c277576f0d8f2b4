// The typed record's field readers and writers, shared by the record's reader/writer
// (store/typed_record.cpp) and its gates part's (store/typed_record_gates.cpp). Internal to
// store/: everything else reads and writes records through typed_record.h.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "store/typed_record.h"

namespace evo::record_io {

template <typename T>
bool has_type(const nlohmann::json& v) {
  if constexpr (std::is_same_v<T, std::string>)
    return v.is_string();
  else if constexpr (std::is_same_v<T, bool>)
    return v.is_boolean();
  else if constexpr (std::is_same_v<T, long long>)
    return v.is_number_integer();
  else if constexpr (std::is_same_v<T, double>)
    return v.is_number();
  else
    return false;
}

// Moves a field of the expected type out of `obj` into a typed member; anything else (absent,
// null, another type) stays in `obj`, which becomes the part's `extra`.
template <typename T>
void take(nlohmann::json& obj, const char* key, std::optional<T>& out) {
  auto it = obj.find(key);
  if (it == obj.end() || !has_type<T>(*it)) return;
  out = it->get<T>();
  obj.erase(it);
}

template <typename T>
void put(nlohmann::json& obj, const char* key, const std::optional<T>& v) {
  if (v) obj[key] = *v;
}

// A nested part: read when the field is an object, else left in `parent` as it is.
template <typename Part, typename Reader>
void take_part(nlohmann::json& parent, const char* key, std::optional<Part>& out, Reader read) {
  auto it = parent.find(key);
  if (it == parent.end() || !it->is_object()) return;
  out = read(nlohmann::json(*it));
  parent.erase(it);
}

// A list of parts: read when the field is a list of objects, else left as it is.
template <typename Part, typename Reader>
void take_list(nlohmann::json& parent, const char* key, std::optional<std::vector<Part>>& out, Reader read) {
  auto it = parent.find(key);
  if (it == parent.end() || !it->is_array()) return;
  for (const auto& e : *it)
    if (!e.is_object()) return;
  std::vector<Part> parts;
  for (const auto& e : *it) parts.push_back(read(nlohmann::json(e)));
  out = std::move(parts);
  parent.erase(it);
}

// A list of strings: read when every element is one, else left as it is.
inline void take_strings(nlohmann::json& parent, const char* key, std::optional<std::vector<std::string>>& out) {
  auto it = parent.find(key);
  if (it == parent.end() || !it->is_array()) return;
  for (const auto& e : *it)
    if (!e.is_string()) return;
  out = it->get<std::vector<std::string>>();
  parent.erase(it);
}

template <typename Part, typename Writer>
void put_list(nlohmann::json& obj, const char* key, const std::optional<std::vector<Part>>& v, Writer write) {
  if (!v) return;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : *v) list.push_back(write(p));
  obj[key] = std::move(list);
}

// A timing entry's integrity part (store/typed_record_timing.cpp).
TimingIntegrity read_integrity(nlohmann::json j);
nlohmann::json write_integrity(const TimingIntegrity& t);

// The fitness part (store/typed_record.cpp), which a population's elites carry too.
Fitness read_fitness(nlohmann::json j);
nlohmann::json write_fitness(const Fitness& f);

// The gates part (store/typed_record_gates.cpp).
RecordGates read_gates(nlohmann::json j);
nlohmann::json write_gates(const RecordGates& g);
GateCheck read_check(nlohmann::json j);

}  // namespace evo::record_io
