#include "evolve/request.h"

#include <fmt/format.h>

#include "core/param_json.h"
#include "core/paths.h"
#include "core/sha256.h"
#include "search/search_space.h"
#include "store/json_fields.h"
#include "store/population.h"

namespace evo {

using nlohmann::json;

namespace {

constexpr const char* kSemantics =
    "Scaled dot-product attention forward: O = softmax(Q·Kᵀ·scale [+ causal mask, top-left aligned]) · V, "
    "per batch and query head; K/V heads are shared by Hq/Hkv query heads (GQA/MQA). Any Sq, Skv (ragged tails, "
    "Sq != Skv), strides with a contiguous last dim (BHSD or BSHD). FP32 softmax and accumulation; output in the "
    "input dtype, every element written, inputs untouched. The file starts with a /*evo {json} */ front matter "
    "(summary, parent, params with domains, dtypes, head_dims, min_sm, notes; docs/variants.md) and exports "
    "extern \"C\" __global__ void evo_attn_fwd(const __grid_constant__ EvoAttnParams p) plus EVO_EXPORT_LAUNCH(...).";

// Each distinct source once, by SHA-256: elites of one variant file share it.
class Sources {
 public:
  explicit Sources(std::filesystem::path root) : root_(std::move(root)) {}
  // The key of the text at `path` (relative to the root) in "sources"; "" when unreadable.
  std::string add(const std::string& path) {
    if (path.empty() || !std::filesystem::is_regular_file(root_ / path)) return "";
    std::string text = read_file(root_ / path);
    std::string sha = sha256_hex(text);
    if (!texts_.contains(sha)) texts_[sha] = std::move(text);
    return sha;
  }
  const json& texts() const { return texts_; }

 private:
  std::filesystem::path root_;
  json texts_ = json::object();
};

std::string newest_gpu(const std::vector<Record>& records, const std::string& task) {
  std::string gpu, time;
  for (const auto& r : records)
    if (r.task == task && r.kind == "run" && r.time >= time) {
      if (!r.gpu_key().empty()) gpu = r.gpu_key();
      time = r.time;
    }
  return gpu;
}

// One variant's search space as the request shows it: every part of it the generator can use,
// its EVO_CONSTRAINT rules included (search/search_space.h).
json space_entry(const SearchVariant& sv) { return search_space_json(sv); }

// The ABI a kernel compiles against: evo_attn.cuh and evo_launch.h, which it includes (the
// kernel parameters EvoAttnParams, the launch geometry, the TMA specs), so a generator sees every
// field its kernel reads; and the shared device primitives the stage's variants include
// (evo_split_kv.cuh includes evo_mma.cuh), so it sees every function their kernels call.
std::string abi_header(const std::filesystem::path& root, const Stage& stage) {
  const std::filesystem::path common = root / "variants" / "common";
  std::string text = read_file(common / "evo_attn.cuh") + "\n// ---- variants/common/evo_launch.h (included above)\n" +
                     read_file(common / "evo_launch.h");
  const auto included = [&](const std::string& header) {
    for (const auto& v : stage.variants)
      if (v.source.find("#include \"" + header + "\"") != std::string::npos) return true;
    return false;
  };
  const bool split_kv = included("evo_split_kv.cuh");
  if (split_kv || included("evo_mma.cuh"))
    text +=
        "\n// ---- variants/common/evo_mma.cuh (the stage's variants include it)\n" + read_file(common / "evo_mma.cuh");
  if (split_kv)
    text += "\n// ---- variants/common/evo_split_kv.cuh (the stage's variants include it)\n" +
            read_file(common / "evo_split_kv.cuh");
  return text;
}

json task_context(const RequestInputs& in, const std::string& gpu) {
  const auto& g = in.ctx->gates;
  json shapes = {{"gate", json::array()}, {"benchmark", json::array()}};
  for (const auto& s : g.shapes(g.gate_sets, in.task)) shapes["gate"].push_back(s.dims());
  for (const auto& s : g.shapes(in.bench_sets.empty() ? g.benchmark_sets : in.bench_sets, in.task))
    shapes["benchmark"].push_back(s.dims());
  json caps = json::object();
  for (const auto& [arch, c] : g.resources)
    caps[arch] = {
        {"max_registers", c.max_registers}, {"max_smem_bytes", c.max_smem_bytes}, {"max_threads", c.max_threads}};
  json space = json::array();
  for (const auto& sv : search_space(in.ctx->root, *in.stage, in.task)) space.push_back(space_entry(sv));
  return {{"semantics", kSemantics},
          {"abi_header", abi_header(in.ctx->root, *in.stage)},
          {"shapes", shapes},
          {"resource_caps", caps},
          {"gpu", gpu.empty() ? "unknown (no record yet)" : gpu},
          {"fitness", "geometric mean over the benchmark shapes of the median time (lower wins)"},
          {"search_space", space}};
}

json elites_of(const RequestInputs& in, const Population& pop, const std::map<std::string, Record>& by_id,
               Sources& sources) {
  json out = json::array();
  for (const auto& elite : stage_elites(pop, in.stage->number)) {
    const json e = elite_json(elite);  // the population file's fields, as the generator reads them
    json x = {{"candidate_id", e["candidate_id"]},
              {"variant", e["variant"]},
              {"params", e["params"]},
              {"fitness", e["fitness"]},
              {"timing", e["timing"]},
              {"resources", e["resources"]},
              {"lineage", lineage(by_id, string_or(e, "candidate_id"))},
              {"source_sha256", sources.add(string_or(e, "source_path"))}};
    // The variant file may have changed since the elite was measured: say so rather than pass
    // another kernel off as the elite's.
    if (x["source_sha256"] != string_or(e, "source_sha256"))
      x["source_note"] = x["source_sha256"] == "" ? "the elite's source file is gone"
                                                  : "the variant file changed since this elite was measured: "
                                                    "source_sha256 is the file as it is now";
    out.push_back(x);
  }
  return out;
}

// Without elites (no record on this GPU yet), the stage's own variant files to start from.
json stage_variants(const RequestInputs& in, Sources& sources) {
  json out = json::array();
  for (const auto& v : in.stage->variants) {
    if (!v.supports(in.task)) continue;
    json domain = json::object();
    for (const auto& t : v.params) domain[t.name] = t.values;
    out.push_back({{"variant", v.id}, {"source_sha256", sources.add(v.path.string())}, {"tunables", domain}});
  }
  return out;
}

json insights(const RequestInputs& in, const Population& pop, const std::map<std::string, Record>& by_id) {
  json notes = json::object();
  const auto sj = in.ctx->root / in.stage->dir / "stage.json";
  if (std::filesystem::exists(sj)) {
    const json j = json::parse(read_file(sj), nullptr, false);
    for (const char* k : {"title", "technique", "prediction", "notes"})
      if (j.is_object() && j.contains(k) && j[k].is_string()) notes[k] = j[k];
    if (j.is_object() && j.contains("profile")) notes["profile"] = j["profile"];
  }
  // Measured deltas: each elite against the record it was bred from.
  json deltas = json::array();
  for (const auto& e : stage_elites(pop, in.stage->number)) {
    const auto chain = lineage(by_id, e.candidate_id.value_or(""), 1);
    if (chain.size() < 2 || !by_id.count(chain[1])) continue;
    const Record& parent = by_id.at(chain[1]);
    const double pf = fitness_us(parent);
    const double cf = e.fitness_us();
    if (pf > 0 && cf > 0)
      deltas.push_back({{"parent", chain[1]},
                        {"child", chain[0]},
                        {"parent_params", params_json(parent.params)},
                        {"child_params", params_json(e.params)},
                        {"parent_us", pf},
                        {"child_us", cf},
                        {"change", fmt::format("{:+.1f} %", 100.0 * (cf / pf - 1.0))}});
  }
  return {{"stage_notes", notes},
          {"deltas", deltas},
          {"profiles", notes.contains("profile") ? notes["profile"] : json("none recorded for this stage")}};
}

}  // namespace

bool valid_operator(const std::string& op) { return op == "free" || op == "insight" || op == "full"; }

std::map<std::string, Record> index_by_candidate(const std::vector<Record>& records) {
  std::map<std::string, Record> by;
  for (const auto& r : records)
    if (r.kind == "run") {
      auto [slot, added] = by.try_emplace(r.candidate_id, r);
      if (!added && (r.fitness || r.newer_than(slot->second))) slot->second = r;
    }
  return by;
}

std::vector<std::string> lineage(const std::map<std::string, Record>& by, const std::string& id, size_t depth) {
  std::vector<std::string> chain{id};
  std::string at = id;
  for (size_t i = 0; i < depth; ++i) {
    auto it = by.find(at);
    if (it == by.end()) break;
    const auto entry = evolve_entry(it->second);
    std::string parent = entry ? entry->parent : "";
    parent = parent.substr(0, parent.find('+'));
    if (parent.empty() || parent == at) break;
    chain.push_back(parent);
    at = parent;
  }
  return chain;
}

json failure_feedback(const Record& r) {
  json f = {{"candidate_id", r.candidate_id},
            {"variant", r.variant},
            {"params", params_json(r.params)},
            {"outcome", std::string(to_string(r.outcome))},
            {"reason", r.reason.value_or("")}};
  if (r.compile && r.compile->extra.contains("log") && r.compile->extra["log"].is_string())
    f["compile_log"] = r.compile->extra["log"].get<std::string>().substr(0, 4096);
  if (r.gates && r.gates->correctness && r.gates->correctness->checks) {
    const auto& checks = *r.gates->correctness->checks;
    for (size_t i = 0; i < checks.size(); ++i)
      if (checks[i].pass == false) {  // the case as the record writes it, every figure included
        f["failing_case"] = write_record(r)["gates"]["correctness"]["checks"][i];
        break;
      }
  }
  if (const auto e = evolve_entry(r)) f["rationale"] = e->rationale;
  return f;
}

json history_entry(const ProposalVerdict& v, int generation) {
  json h = {{"generation", generation},
            {"candidate_id", v.candidate_id},
            {"variant", v.variant},
            {"params", v.params ? params_json(*v.params) : json::object()},
            {"outcome", v.outcome ? json(std::string(to_string(*v.outcome))) : json(nullptr)},
            {"fitness_us", v.fitness_us ? json(*v.fitness_us) : json(nullptr)}};
  if (!v.source_sha256.empty()) h["source_sha256"] = v.source_sha256;
  if (v.screen_us) h["screen_us"] = *v.screen_us;
  return h;
}

json build_request(const RequestInputs& in) {
  const std::vector<json> none;
  const auto& records = in.records ? *in.records : none;
  const std::vector<Record> typed = typed_records(records);
  const std::string gpu = in.gpu_key.empty() ? newest_gpu(typed, in.task.name()) : in.gpu_key;
  const auto by_id = index_by_candidate(typed);
  Population pop;
  for (const auto& [key, p] : derive_populations(records))
    if (key == gpu + "/" + in.task.name()) pop = p;
  json req = {{"schema_version", "2.0"},
              {"kind", "evo-request"},
              {"operator", in.op},
              {"task", in.task.name()},
              {"stage", {{"number", in.stage->number}, {"title", in.stage->title}}},
              {"i1", task_context(in, gpu)}};
  if (!in.run.is_null()) {
    req["run"] = in.run;
    req["history"] = in.history;
  }
  Sources sources(in.ctx->root);
  if (in.op == "full") {
    req["i2"] = {{"elites", elites_of(in, pop, by_id, sources)}};
    if (req["i2"]["elites"].empty()) req["i2"]["variants"] = stage_variants(in, sources);
  }
  if (in.op != "free") req["i3"] = insights(in, pop, by_id);
  json failures = json::array();
  for (const auto& f : in.feedback) failures.push_back(f);
  for (auto it = typed.rbegin(); it != typed.rend() && failures.size() < in.max_failures; ++it)
    if (it->kind == "run" && it->task == in.task.name() && it->stage == in.stage->number && it->outcome != Outcome::ok)
      failures.push_back(failure_feedback(*it));
  req["failures"] = failures;
  req["sources"] = sources.texts();
  req["answer_with"] =
      R"({"candidates": [{"source": "<whole .cu file, front matter first>", "params": {"<TUNABLE>": <integer>}, )"
      R"("parent": "<candidate id>", "rationale": "<why>"}]} (params optional: the front matter's first values )"
      R"(otherwise; at most run.wanted candidates))";
  return req;
}

}  // namespace evo
