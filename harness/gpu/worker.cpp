// The worker: the only process that runs a candidate's code. It owns one CUDA context,
// generates inputs, launches, times, and hands outputs to the parent as files. It never
// sees a reference output, and its verdicts are raw facts (bytes, hashes, errors); the
// parent decides. A fault here kills this process only.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/paths.h"
#include "core/stats.h"
#include "gpu/cuda_driver.h"
#include "gpu/device_check_worker.h"
#include "gpu/device_checker.h"
#include "gpu/launch_draws.h"
#include "gpu/nvml.h"
#include "gpu/problem_call.h"
#include "gpu/reference_worker.h"
#include "gpu/timing_loop.h"
#include "gpu/tma_maps.h"
#include "gpu/worker_device.h"
#include "gpu/worker_protocol.h"
#include "store/atomic_file.h"

namespace evo {

using nlohmann::json;

namespace {

using namespace worker_device;

class Worker {
 public:
  explicit Worker(WorkerJob job) : job_(std::move(job)) {}

  int run() {
    emit(phase_event("init"));
    timed("init", [&] { init_device(); });
    if (job_.mode == "reference") {
      run_reference_cases(job_, support_, stream_);
    } else if (job_.mode == "sanitize") {
      timed("load", [&] { load_candidate(); });
      run_instrumented();
    } else {
      timed("load", [&] { load_candidate(); });
      timed("gate", [&] { run_gate(); });
      if (!timed("await", [&] { return parent_says_continue(); })) return 0;
      run_bench();
    }
    WorkerEvent done = worker_event(WorkerEventKind::done);
    done.fields["clock"] = worker_clock_json();
    emit(done);
    return 0;
  }

 private:
  void init_device() {
    check(cu().cuInit(0), "cuInit", "runtime");
    check(cu().cuDeviceGet(&dev_, job_.device), "cuDeviceGet", "runtime");
    check(cu().cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain", "runtime");
    check(cu().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent", "runtime");
    check(cu().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate", "runtime");
    check(cu().cuStreamCreate(&stream2_, CU_STREAM_NON_BLOCKING), "cuStreamCreate", "runtime");
    check(cu().cuEventCreate(&held_, CU_EVENT_DISABLE_TIMING), "cuEventCreate", "runtime");
    check(cu().cuEventCreate(&e0_, CU_EVENT_DEFAULT), "cuEventCreate", "runtime");
    check(cu().cuEventCreate(&e1_, CU_EVENT_DEFAULT), "cuEventCreate", "runtime");
    char name[256] = {};
    cu().cuDeviceGetName(name, sizeof(name), dev_);
    int major = 0, minor = 0, driver = 0;
    cu().cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_);
    cu().cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_);
    cu().cuDeviceGetAttribute(&sms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_);
    cu().cuDeviceGetAttribute(&smem_per_sm_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev_);
    cu().cuDeviceGetAttribute(&l2_bytes_, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev_);
    cu().cuDriverGetVersion(&driver);
    auto clock = nvml_sm_clock_mhz(job_.device);
    auto max_clock = nvml_max_sm_clock_mhz(job_.device);
    emit(device_event({{"name", name},
                       {"cc", major * 10 + minor},
                       {"sms", sms_},
                       {"l2_bytes", l2_bytes_},
                       {"driver", driver},
                       {"sm_clock_mhz", clock ? json(*clock) : json(nullptr)},
                       {"sm_clock_max_mhz", max_clock ? json(*max_clock) : json(nullptr)}}));
    support_ = load_support_kernels(job_.support_cubin, job_.task, job_.reference_kernel);
    checker_.emplace(support_, job_.task, stream_);
    // L2 flush buffer: writing twice the L2 evicts every line the previous sample left there.
    flush_bytes_ = std::max<size_t>(size_t(l2_bytes_) * 2, 64u << 20);
    check(cu().cuMemAlloc(&flush_, flush_bytes_), "cuMemAlloc(flush)", "runtime");
  }

  // Again after a two-stream case (announce false): fresh __device__ globals, as in a new process.
  void load_candidate(bool announce = true) {
    if (announce) emit(phase_event("load"));
    if (module_) check(cu().cuModuleUnload(module_), "cuModuleUnload", "crash");
    std::string image = read_file(job_.cubin);
    check(cu().cuModuleLoadData(&module_, image.data()), "cuModuleLoadData", "load");
    check(cu().cuModuleGetFunction(&fn_, module_, "evo_attn_fwd"), "cuModuleGetFunction(evo_attn_fwd)", "load");
    std::string why;
    auto specs = read_tma_specs(image, &why);
    if (!specs) throw CudaFailure{"load", "evo_tma: " + why};
    tma_specs_ = std::move(*specs);
    const char* step = "";
    check(evo_set_function_attributes(cu(), fn_, job_.launch, &step), step, "runtime");
  }

  // The launch of the ABI floor (evo_host_launch.h: evo_grid's grid, a cluster launch for a
  // cluster kernel), the one the exported runtime launches by too.
  void launch(Params& a) {
    const EvoShape shape{a.batch, a.heads_q, a.heads_kv, a.seq_q, a.seq_kv, a.head_dim, a.causal};  // a primer's too
    check(evo_launch_kernel(cu(), fn_, job_.launch, shape, sms_, stream_, &a), "launching evo_attn_fwd", "runtime");
  }

  void sync(const char* what) { check(cu().cuStreamSynchronize(stream_), what, "crash"); }

  // Pre-fill (drawn: gpu/launch_draws.h), launch, wait, read back: the output bytes in logical
  // BHSD order and the pre-fill they replaced (none if !read_back).
  UnwrittenEvidence launch_once(Problem& p, LaunchKind kind, bool read_back = true, int splits = 0,
                                std::pair<int, int> lengths = {0, 0}) {
    p.prefill_async(support_, draws_.prefill(kind), stream_);
    UnwrittenEvidence r;
    auto output = [&] { return p.logical(Problem::Tensor::o); };
    if (read_back) {
      sync("output pre-fill");
      r.prefill = timed("readback", output);
    }
    Params a = params(p, splits, lengths);
    launch(a);
    sync("evo_attn_fwd");
    if (read_back) r.out = timed("readback", output);
    return r;
  }

  // The candidate's launch for `p` on `stream`: launch() enqueues for current_ on stream_.
  void launch_on(Problem& p, CUstream stream) {
    Problem* const keep_problem = current_;
    const CUstream keep_stream = stream_;
    current_ = &p;
    stream_ = stream;
    Params a = params(p);
    launch(a);
    current_ = keep_problem;
    stream_ = keep_stream;
  }

  // A two-stream case's launches: both outputs pre-filled, then evo_hold keeps both streams
  // waiting while the host enqueues the candidate on each, so the two grids start together
  // and are in flight at once (state a kernel keeps between launches is shared by both).
  void launch_in_flight(Problem& p, Problem& other, LaunchKind kind) {
    p.prefill_async(support_, draws_.prefill(kind), stream_);
    Prefill second = draws_.prefill(LaunchKind::concurrent);
    second.keep_partials = kind == LaunchKind::gate_second;  // both repeat over their workspaces
    other.prefill_async(support_, second, stream2_);
    sync("output pre-fill");
    check(cu().cuStreamSynchronize(stream2_), "output pre-fill", "crash");
    unsigned long long hold_ns = 200000;
    void* args[] = {&hold_ns};
    check(cu().cuLaunchKernel(support_.hold, 1, 1, 1, 32, 1, 1, 0, stream_, args, nullptr), "evo_hold", "runtime");
    check(cu().cuEventRecord(held_, stream_), "cuEventRecord", "runtime");
    check(cu().cuStreamWaitEvent(stream2_, held_, 0), "cuStreamWaitEvent", "runtime");
    launch_on(p, stream_);
    launch_on(other, stream2_);
    sync("evo_attn_fwd");
    check(cu().cuStreamSynchronize(stream2_), "evo_attn_fwd (second stream)", "crash");
  }

  // A split case first runs on other inputs at its addresses, its first launch finding what those
  // launches left, as a package's next call does (a model's next step through the same buffers;
  // hacker round 9: a memo keyed on the call): split another way (drawn), as an earlier call of
  // another shape left it (round 13); at the case's split count over another shape (fewer query
  // rows and keys, drawn), as an earlier call the package split as this one left it (round 14);
  // then the case's way. Their outputs are not checked.
  void prime_split_workspace(Problem& p, const CaseSpec& c) {
    const int splits = c.device_check.on && c.two_streams ? 1 : params(p).num_splits;
    if (splits <= 1) return;
    p.fill(support_, c, stream_, draws_.fresh_inputs());
    const long long blocks = evo_kv_blocks(job_.launch, evo_call_shape(evo_call(p, job_.task.causal)));
    launch_once(p, LaunchKind::gate_primer, false, draws_.primer_splits(splits, job_.launch.kv_splits_max, blocks));
    const int block = int(std::max(job_.launch.kv_block, 1u));
    launch_once(p, LaunchKind::gate_primer, false, splits,
                draws_.primer_lengths(c.shape, splits, block, job_.task.causal));
    launch_once(p, LaunchKind::gate_primer, false);
  }

  void run_gate() {
    for (const auto& c : job_.cases) {
      emit(phase_event("gate", c.id));
      Problem p(job_.task);
      current_ = &p;
      p.allocate(c.shape, c.layout, kGuardBytes, c.junk, c.seed);
      prime_split_workspace(p, c);
      p.fill(support_, c, stream_);              // the case's own inputs, padding and O's gaps anew
      if (c.device_check.on && c.two_streams) {  // beside a second problem, both launches in flight
        Problem other(job_.task);
        CaseSpec oc = c;
        oc.seed = c.seed + 1;  // other inputs, and fewer query rows when there are several: another shape
        oc.shape.seq_q = (c.shape.seq_q + 1) / 2;
        other.allocate(oc.shape, oc.layout, kGuardBytes, oc.junk, oc.seed);
        other.fill(support_, oc, stream_);
        share_inputs(p, other, c.streams_share);
        emit(check_on_device({&p, &other}, c, support_, job_.task, stream_,
                             [&](LaunchKind k) { launch_in_flight(p, other, k); }));
        // What the kernel keeps in globals is as two launches in flight left it; later cases and
        // the timing loop see it as a fresh process would, so a state machine that concurrency
        // breaks (and so disarms) cannot hide what it does alone.
        load_candidate(false);
        continue;
      }
      if (c.device_check.on) {  // too large for host copies: hashed, referenced, compared on the GPU
        emit(check_on_device({&p}, c, support_, job_.task, stream_, [&](LaunchKind k) { launch_once(p, k, false); }));
        continue;
      }
      // Keyed hashes on the GPU (gpu/device_checker.h): no host copy of the inputs.
      const auto before = timed("hash", [&] { return checker_->inputs(p); });
      // O's gaps, the tile counters and the repeat launch's workspace (check_on_device does the same).
      GateSideEffects effects = timed("hash", [&] { return GateSideEffects({side_effect_probes(*checker_, p)}); });
      const UnwrittenEvidence first = launch_once(p, LaunchKind::gate_first);  // read back
      timed("hash", [&] {
        effects.check_gaps();
        effects.after_launch();
      });
      const UnwrittenEvidence second = launch_once(p, LaunchKind::gate_second);  // another pre-fill
      const bool deterministic = first.out == second.out;
      check(cu().cuCtxSynchronize(), "evo_attn_fwd", "crash");  // nothing of it runs while they are hashed
      const bool inputs_intact = timed("hash", [&] { return checker_->inputs(p); }) == before;
      timed("hash", [&] {
        effects.check_gaps();
        effects.after_launch();
      });
      const bool guards_intact = p.guards_intact() && effects.gaps_intact();  // a changed gap: a write outside O
      timed("write", [&] { write_scratch_file(c.out_path, mark_unwritten(first, second)); });
      emit(case_done_event(c.id, c.out_path, deterministic, inputs_intact, guards_intact, effects.counters_zero(),
                           effects.workspace_repeat_same()));
      current_ = nullptr;
    }
  }

  bool parent_says_continue() {
    emit(worker_event(WorkerEventKind::await));
    std::string answer;
    return std::getline(std::cin, answer) && answer == "continue";
  }

  // Under compute-sanitizer: exact-size buffers (no guard bands) and an output the harness
  // never writes, so memcheck sees every stray access and initcheck every read of output the
  // kernel did not write first. One launch per case; the tool, not a replay, is the check. A
  // deep case's layout keeps its padding junk, as in the deep tier (initcheck cannot see reads
  // of a padded view's output: its buffer was filled with junk first).
  void run_instrumented() {
    for (const auto& c : job_.cases) {
      emit(phase_event("gate", c.id));
      Problem p(job_.task);
      current_ = &p;
      p.allocate(c.shape, c.layout, 0, c.junk, c.seed);
      p.fill(support_, c, stream_);
      const std::string before = p.input_hash();
      Params a = params(p);
      launch(a);
      sync("evo_attn_fwd");
      write_scratch_file(c.out_path, p.logical(Problem::Tensor::o));
      emit(case_done_event(c.id, c.out_path, std::nullopt, p.input_hash() == before, true));
      current_ = nullptr;
    }
  }

  // Per benchmark shape: the timing loop (gpu/timing_loop.h), or for a pruned shape one checked
  // launch. A failed timed sample ends the bench: the parent's verdict is already decided.
  void run_bench() {
    bool pruned = false;
    for (size_t bi = 0; bi < job_.bench.size(); ++bi) {
      const BenchSpec& b = job_.bench[bi];
      emit(phase_event("timing", "", b.id));
      Problem p(job_.task);
      current_ = &p;
      p.allocate(b.timed.shape);
      p.fill(support_, b.timed, stream_);
      const TimingRig rig{job_,
                          support_,
                          *checker_,
                          stream_,
                          e0_,
                          e1_,
                          flush_,
                          flush_bytes_,
                          [&] { return params(p); },
                          [&](Params& a) { launch(a); },
                          draws_};
      WorkerEvent timing = timing_event(b.id);
      std::optional<FullCheck> checked;  // this shape's post_done
      if (!pruned) {
        const ShapeTiming st = timed("timing", [&] { return time_shape(rig, p, b); });
        timing.fields = st.extra;
        timing.fields["stats"] = stats_json(st.stats);
        timing.fields["integrity"] = to_json(st.facts);
        if (bi == 0 && job_.prune_us > 0 && st.stats.p10 > job_.timing.prune_factor * job_.prune_us)
          pruned = timing.pruned = true;
        if (st.facts.failure) {
          emit(timing);
          current_ = nullptr;
          return;
        }
        checked = st.checked;
      } else {
        timing.fields["skipped"] = "pruned";
        checked = timed("timing", [&] { return check_shape(rig, p, b); });
      }
      emit(timing);
      const bool guards = p.guards_intact();
      if (checked) emit(post_done_event(b.id, *checked, guards));
      current_ = nullptr;
    }
  }

  // EvoAttnParams for a problem, with the tensor maps the variant exports (evo_tma) encoded
  // for this problem's tensors (an encoding error is the candidate's `load` verdict), and for a
  // split-KV kernel the split count of evo_launch.h (or `splits`: a primer's) and the problem's
  // workspace (counters 0, partials stale; it only grows, so a primer's larger one is kept),
  // cleared ahead of the launch on stream_ where the package would clear it.
  Params params(Problem& p, int splits = 0, std::pair<int, int> lengths = {0, 0}) const {
    const EvoCall call = evo_call(p, job_.task.causal, lengths);
    Params a = evo_call_params(call);
    const EvoShape shape = evo_call_shape(call);
    a.num_splits = splits > 0 ? splits : evo_num_splits(job_.launch, shape, sms_, smem_per_sm_);
    const long long counters =
        evo_workspace_layout(evo_tiles(job_.launch, shape), a.num_splits, int(job_.launch.rows_per_cta), shape.head_dim)
            .ml_offset;
    a.workspace = reinterpret_cast<void*>(static_cast<uintptr_t>(
        p.workspace_for(size_t(evo_workspace_bytes(job_.launch, shape, a.num_splits)), size_t(counters))));
    if (a.num_splits > 1)
      p.clear_workspace_async(evo_tiles(job_.launch, shape), a.num_splits, int(job_.launch.rows_per_cta),
                              shape.head_dim, stream_);
    if (tma_specs_.empty()) return a;
    if (auto err = encode_tma_maps(tma_specs_, call.tensor, job_.task.dtype, a.tma)) throw CudaFailure{"load", *err};
    return a;
  }

  WorkerJob job_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr, stream2_ = nullptr;  // stream2_: a two-stream case's second launch
  CUevent held_ = nullptr;                         // both streams wait for evo_hold's end
  CUevent e0_ = nullptr, e1_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
  Support support_;
  std::optional<DeviceChecker> checker_;
  CUdeviceptr flush_ = 0;
  size_t flush_bytes_ = 0;
  int sms_ = 0, l2_bytes_ = 0, smem_per_sm_ = 0;
  Problem* current_ = nullptr;
  LaunchDraws draws_{(uint64_t(std::random_device{}()) << 32) ^ std::random_device{}()};  // drawn per worker
  std::vector<TmaSpec> tma_specs_;
};

}  // namespace

int worker_main(const std::string& job_path) {
  try {
    WorkerJob job = worker_job_from_json(json::parse(read_file(job_path)));
    cuda_driver();  // exit 2 path: no driver
    return Worker(std::move(job)).run();
  } catch (const CudaFailure& f) {
    emit(error_event(f.outcome, f.reason));
    return 0;
  } catch (const EvoError& e) {
    emit(error_event("environment", e.what()));
    return int(e.code());
  } catch (const std::exception& e) {
    emit(error_event("runtime", std::string("worker: ") + e.what()));
    return 0;
  }
}

}  // namespace evo
